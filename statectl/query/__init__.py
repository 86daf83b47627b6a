"""Interactive queries over a job's materialised output: views and the HTTP server."""
