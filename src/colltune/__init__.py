"""colltune: measure, verify and tune MPI collective operations."""

__version__ = "0.1.0"
