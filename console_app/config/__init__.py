"""CONFIG tab: Global Config, Optimizer and Multi-GPU settings with undo, and the live N-worker plan."""
