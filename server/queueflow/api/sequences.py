"""`POST /v1/sequences/{key}/resume`: move a halted sequence past the dead-lettered job that holds it
(`core.sequences`)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, post
from litestar.params import Parameter
from msgspec import Struct

from queueflow.api.auth import TENANT, tenant_of
from queueflow.api.jobs import TENANT_ERRORS
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.common import NO_NUL
from queueflow.api.services import services_of

SequenceKeyPath = Annotated[
    str, Parameter(min_length=1, max_length=255, pattern=NO_NUL, description="A sequence's key (URL-encoded)")
]


class SequenceResumed(Struct, kw_only=True):
    """The sequence after a resume: nothing blocks it any more."""

    key: str
    blocked_by: None = None


class SequencesController(Controller):
    path = "/sequences"
    tags = ("jobs",)
    opt = TENANT

    @post(
        "/{key:str}/resume",
        operation_id="resumeSequence",
        status_code=200,
        responses=problem_responses(400, *TENANT_ERRORS, 404, 409),
    )
    async def resume_sequence(self, request: Request[Any, Any, Any], key: SequenceKeyPath) -> SequenceResumed:
        """Let the jobs a dead-lettered `halt` job holds run: the sequence moves past it (404: no job has this key;
        409: nothing blocks it)."""
        await services_of(request).engine.resume_sequence(tenant_of(request), key)
        return SequenceResumed(key=key)
