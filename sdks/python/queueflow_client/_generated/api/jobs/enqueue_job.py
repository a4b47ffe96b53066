from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.enqueue_job import EnqueueJob
from ...models.job import Job
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: EnqueueJob,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    if not isinstance(traceparent, Unset):
        headers["traceparent"] = traceparent

    if not isinstance(tracestate, Unset):
        headers["tracestate"] = tracestate

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/jobs",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Job | Problem | None:
    if response.status_code == 200:
        response_200 = Job.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = Job.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Job | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: EnqueueJob,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[Job | Problem]:
    """EnqueueJob

     Enqueue a job.

    Args:
        idempotency_key (None | str | Unset): Scoped to the tenant: a repeat answers 200 with the
            original object, unchanged.
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueJob):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Job | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
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
    body: EnqueueJob,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Job | Problem | None:
    """EnqueueJob

     Enqueue a job.

    Args:
        idempotency_key (None | str | Unset): Scoped to the tenant: a repeat answers 200 with the
            original object, unchanged.
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueJob):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Job | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
        traceparent=traceparent,
        tracestate=tracestate,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: EnqueueJob,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[Job | Problem]:
    """EnqueueJob

     Enqueue a job.

    Args:
        idempotency_key (None | str | Unset): Scoped to the tenant: a repeat answers 200 with the
            original object, unchanged.
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueJob):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Job | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: EnqueueJob,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Job | Problem | None:
    """EnqueueJob

     Enqueue a job.

    Args:
        idempotency_key (None | str | Unset): Scoped to the tenant: a repeat answers 200 with the
            original object, unchanged.
        traceparent (None | str | Unset): W3C Trace Context: stored with the job (a workflow's
            step jobs inherit it), returned on lease, and the parent of the worker's task span. One
            that does not parse is ignored.
        tracestate (None | str | Unset): W3C Trace Context vendor data, kept with a valid
            traceparent.
        body (EnqueueJob):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Job | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
            traceparent=traceparent,
            tracestate=tracestate,
        )
    ).parsed
