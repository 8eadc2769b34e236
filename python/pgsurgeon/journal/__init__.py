"""The byte-undo journal: every byte a command writes into a data directory is recorded (old and new, side files
for cut tails and removed segments) and fsynced before the data file is touched, so it can be put back exactly.

The simulator (``corrupt``/``undo``) and repair both write through it; neither imports the other. ``server``
keeps the server out of the way while files are written.
"""
