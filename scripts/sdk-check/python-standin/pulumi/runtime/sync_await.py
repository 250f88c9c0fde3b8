def _sync_await(awaitable):
    raise NotImplementedError("stand-in pulumi: no event loop")
