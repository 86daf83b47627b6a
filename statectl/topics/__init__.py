"""Topic configs: known keys and their units, the diff between wanted and current, the topics file, applying a plan."""
