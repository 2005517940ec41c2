"""smith's compiled core (Cython). Python code imports these through thin wrappers."""
