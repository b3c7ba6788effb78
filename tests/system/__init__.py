"""The whole program as a user runs it: CLI trainings, mpiexec jobs, interruptions, simulated hosts, soak, packaging."""
