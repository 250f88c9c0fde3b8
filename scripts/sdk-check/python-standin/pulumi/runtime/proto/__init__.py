from . import resource_pb2  # noqa: F401
