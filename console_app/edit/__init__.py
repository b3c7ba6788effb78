"""The EDIT tab: layer palette, network canvas, property panel, issues and statistics."""
