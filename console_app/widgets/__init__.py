"""Small reusable widgets shared by the desktop console's tabs."""
