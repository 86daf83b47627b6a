"""`statectl ui`: a dashboard of the project's jobs in the browser (state, lag, rates, batch time
and state size over time from the runs' events files, restore progress, a checkpoint's
inspect-state report) and the JSON API under it. Everything it serves ships in the package."""
