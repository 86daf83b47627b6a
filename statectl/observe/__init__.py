"""Looking at jobs without changing anything: how far behind their input a job is (lag) and one
glance over a project's jobs (status)."""
