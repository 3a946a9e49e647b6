"""The job script: ``render(plan, connection)``, scripts from keywords alone, and self-contained ``--run`` scripts."""
