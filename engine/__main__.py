"""``python -m engine`` runs the nnconsole CLI."""
from engine.cli import main

raise SystemExit(main())
