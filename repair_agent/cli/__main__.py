"""`python -m repair_agent.cli`: the same as `repair-agent`."""
import sys

from . import main

sys.exit(main())
