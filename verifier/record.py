"""The base of the verifier's typed records.

pydantic builds a model's validator and serializer when the class is defined, unless told to wait:
with `defer_build` it builds them on the model's first use. A command uses a few of the ~130 models it
imports, and a run starts many short processes (the CLI, sweep workers), so building all of them at
import was a third of a short command's CPU. Every model here derives from `Record`; a subclass's own
`model_config` adds to this one.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    model_config = ConfigDict(defer_build=True)
