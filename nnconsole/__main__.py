"""``python -m nnconsole`` runs the nnconsole command line (the same as the ``nnconsole`` script)."""
from nnconsole.cli import main

raise SystemExit(main())
