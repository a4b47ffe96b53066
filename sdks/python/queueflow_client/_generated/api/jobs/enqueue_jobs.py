from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.enqueue_batch import EnqueueBatch
from ...models.job_batch import JobBatch
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: EnqueueBatch,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(traceparent, Unset):
        headers["traceparent"] = traceparent

    if not isinstance(tracestate, Unset):
        headers["tracestate"] = tracestate

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs/batch",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JobBatch | Problem | None:
    if response.status_code == 201:
        response_201 = JobBatch.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[JobBatch | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: EnqueueBatch,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[JobBatch | Problem]:
    """EnqueueJobs

     Enqueue up to 1000 jobs atomically (all or none).

    Args:
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobBatch | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: EnqueueBatch,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> JobBatch | Problem | None:
    """EnqueueJobs

     Enqueue up to 1000 jobs atomically (all or none).

    Args:
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobBatch | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: EnqueueBatch,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[JobBatch | Problem]:
    """EnqueueJobs

     Enqueue up to 1000 jobs atomically (all or none).

    Args:
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobBatch | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: EnqueueBatch,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> JobBatch | Problem | None:
    """EnqueueJobs

     Enqueue up to 1000 jobs atomically (all or none).

    Args:
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueBatch):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobBatch | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            traceparent=traceparent,
            tracestate=tracestate,
        )
    ).parsed
