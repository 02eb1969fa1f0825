"""A broker's log: file names, framing, segments and side files, discovery, the planner, the task reader,
tiered layouts and the LogWriter."""
