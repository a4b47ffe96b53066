from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.job_page import JobPage
from ...models.list_jobs_status_type_1 import ListJobsStatusType1
from ...models.list_jobs_status_type_2_type_1 import ListJobsStatusType2Type1
from ...models.list_jobs_status_type_3_type_1 import ListJobsStatusType3Type1
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    queue_name: None | str | Unset = UNSET,
    status: ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None | Unset = UNSET,
    task_name: None | str | Unset = UNSET,
    workflow_id: None | str | Unset = UNSET,
    metadata: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_queue_name: None | str | Unset
    if isinstance(queue_name, Unset):
        json_queue_name = UNSET
    else:
        json_queue_name = queue_name
    params["queue_name"] = json_queue_name

    json_status: None | str | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    elif (
        isinstance(status, ListJobsStatusType1)
        or isinstance(status, ListJobsStatusType2Type1)
        or isinstance(status, ListJobsStatusType3Type1)
    ):
        json_status = status.value
    else:
        json_status = status
    params["status"] = json_status

    json_task_name: None | str | Unset
    if isinstance(task_name, Unset):
        json_task_name = UNSET
    else:
        json_task_name = task_name
    params["task_name"] = json_task_name

    json_workflow_id: None | str | Unset
    if isinstance(workflow_id, Unset):
        json_workflow_id = UNSET
    else:
        json_workflow_id = workflow_id
    params["workflow_id"] = json_workflow_id

    json_metadata: None | str | Unset
    if isinstance(metadata, Unset):
        json_metadata = UNSET
    else:
        json_metadata = metadata
    params["metadata"] = json_metadata

    params["limit"] = limit

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> JobPage | Problem | None:
    if response.status_code == 200:
        response_200 = JobPage.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[JobPage | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    queue_name: None | str | Unset = UNSET,
    status: ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None | Unset = UNSET,
    task_name: None | str | Unset = UNSET,
    workflow_id: None | str | Unset = UNSET,
    metadata: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[JobPage | Problem]:
    """ListJobs

     List the tenant's jobs, newest first.

    Args:
        queue_name (None | str | Unset):
        status (ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None |
            Unset):
        task_name (None | str | Unset):
        workflow_id (None | str | Unset):
        metadata (None | str | Unset): A JSON object: only jobs whose metadata contains it
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobPage | Problem]
    """

    kwargs = _get_kwargs(
        queue_name=queue_name,
        status=status,
        task_name=task_name,
        workflow_id=workflow_id,
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    queue_name: None | str | Unset = UNSET,
    status: ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None | Unset = UNSET,
    task_name: None | str | Unset = UNSET,
    workflow_id: None | str | Unset = UNSET,
    metadata: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> JobPage | Problem | None:
    """ListJobs

     List the tenant's jobs, newest first.

    Args:
        queue_name (None | str | Unset):
        status (ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None |
            Unset):
        task_name (None | str | Unset):
        workflow_id (None | str | Unset):
        metadata (None | str | Unset): A JSON object: only jobs whose metadata contains it
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobPage | Problem
    """

    return sync_detailed(
        client=client,
        queue_name=queue_name,
        status=status,
        task_name=task_name,
        workflow_id=workflow_id,
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    queue_name: None | str | Unset = UNSET,
    status: ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None | Unset = UNSET,
    task_name: None | str | Unset = UNSET,
    workflow_id: None | str | Unset = UNSET,
    metadata: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[JobPage | Problem]:
    """ListJobs

     List the tenant's jobs, newest first.

    Args:
        queue_name (None | str | Unset):
        status (ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None |
            Unset):
        task_name (None | str | Unset):
        workflow_id (None | str | Unset):
        metadata (None | str | Unset): A JSON object: only jobs whose metadata contains it
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[JobPage | Problem]
    """

    kwargs = _get_kwargs(
        queue_name=queue_name,
        status=status,
        task_name=task_name,
        workflow_id=workflow_id,
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    queue_name: None | str | Unset = UNSET,
    status: ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None | Unset = UNSET,
    task_name: None | str | Unset = UNSET,
    workflow_id: None | str | Unset = UNSET,
    metadata: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> JobPage | Problem | None:
    """ListJobs

     List the tenant's jobs, newest first.

    Args:
        queue_name (None | str | Unset):
        status (ListJobsStatusType1 | ListJobsStatusType2Type1 | ListJobsStatusType3Type1 | None |
            Unset):
        task_name (None | str | Unset):
        workflow_id (None | str | Unset):
        metadata (None | str | Unset): A JSON object: only jobs whose metadata contains it
        limit (int | Unset):  Default: 50.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        JobPage | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            queue_name=queue_name,
            status=status,
            task_name=task_name,
            workflow_id=workflow_id,
            metadata=metadata,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
