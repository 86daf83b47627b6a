"""The command line: Typer only. Commands parse flags, call one core function, hand the result to a renderer."""
