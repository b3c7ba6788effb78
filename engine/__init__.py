"""nnconsole's training engine: project model, layers, planning, training and launching (no Qt)."""
__version__ = "0.1.0"
