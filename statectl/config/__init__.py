"""Job configs: reading YAML with line numbers, the pydantic models of the sections every job shares,
the problem lines their validation errors become, the values Spark would refuse (where the cluster is,
bootstrap servers and client settings by precedence, is ``statectl.cluster.load``).

Importing the package imports nothing heavy; pydantic comes in with the modules that validate.
"""
