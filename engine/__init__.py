"""nnconsole's training engine: project model, layers, planning, training and launching (no Qt)."""
