"""What tests share: builders of projects, networks, datasets and run folders, the real CLI in a subprocess,
in-process training runs, NNC's reference definitions, simulated hosts, and where the checkout's folders are.

Test modules import these (``from tests.support.projects import tabular_project``) and never import each
other (tests/repo/test_test_tree.py checks it), so a test file can move or go without breaking another.
bench/ loads some of them by path (bench/common.py ``test_support``): a module here imports its siblings
relatively (``from .paths import ROOT``), never as ``tests.support``.
"""
