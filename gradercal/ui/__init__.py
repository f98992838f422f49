"""The PySide6 desktop app (installed as ``gradercal.ui``): thin adapters over core and db."""
