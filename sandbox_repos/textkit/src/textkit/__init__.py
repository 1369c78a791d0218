"""textkit: small text utilities.

Import the module you need (``from textkit.slug import slugify``); the package root
deliberately imports nothing so that each utility loads only its own dependencies.
"""

__version__ = "1.4.0"
