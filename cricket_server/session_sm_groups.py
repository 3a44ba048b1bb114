"""A stream's device resources (cuStreamGetDevResource) and the structured SM split
(cuDevSmResourceSplit) of a session.

A stream's resources are its context's: a green context's streams answer the green
context's SMs, other streams the device's. A split takes a resource the session issued and
issues the groups and the remainder it makes (`cricket_server.session_dev_resources`).
"""

from __future__ import annotations

from typing import Any

from cricket_server.backends.sm_groups import SmGroupParams
from cricket_server.resources import ContextRecord
from cricket_server.session_dev_resources import SessionDevResources
from rpc_spec import cricket_rpc as proto

__all__ = ["SessionSmGroups"]


class SessionSmGroups(SessionDevResources):
    """cuStreamGetDevResource, cuDevSmResourceSplit."""

    _stream_context: Any  # SessionTail's: the context of a stream (or of the current one)

    def stream_get_dev_resource(self, stream: int, rtype: int) -> proto.dev_resource:
        call = "cuStreamGetDevResource"
        ctx: ContextRecord = self._stream_context(call, stream)
        return self.context_resource(call, ctx, rtype)

    def sm_resource_split_groups(
        self, w: proto.dev_resource, flags: int, params: list[proto.sm_group_params]
    ) -> proto.sm_group_split:
        call = "cuDevSmResourceSplit"
        self.require_init(call)
        res = self._given_resource(call, w)
        given = [
            SmGroupParams(p.sm_count, p.coscheduled, p.preferred, p.flags, p.locality)
            for p in params
        ]
        groups, remainder, out = self.bsession.sm_split_groups(res, given, flags)
        return proto.sm_group_split(
            groups=[self._issue(g) for g in groups],
            remainder=self._issue(remainder),
            params=[
                proto.sm_group_params(
                    sm_count=p.sm_count,
                    coscheduled=p.coscheduled,
                    preferred=p.preferred,
                    flags=p.flags,
                    locality=p.locality,
                )  # fmt: skip
                for p in out
            ],
        )
