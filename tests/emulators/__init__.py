"""Strict emulators of HPC batch systems for the tests (PBS Pro / Torque, LSF); see common.py."""
