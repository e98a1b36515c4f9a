"""Websocket endpoints: the frontend and querier protocol, and the benchmark relay."""

__all__: list[str] = []
