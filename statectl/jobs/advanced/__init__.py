"""Chapter 6's state-management examples and the sales-aggregation post, as Spark jobs
(``statectl run advanced-state EXAMPLE``). The rules they apply live in
:mod:`jobs.advanced.rules`; these modules hold the Spark plumbing and the StatefulProcessors."""
