"""Job configs: reading YAML with line numbers, the sections every job shares, bootstrap precedence."""
