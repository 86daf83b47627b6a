"""statectl's HTTP endpoints (the dashboard, ``serve``, a run's metrics): who may read them."""
