"""Stand-in for the pulumi package: import-time names only (see ../README.md)."""
import typing

from . import runtime, log, _utils  # noqa: F401

Inputs = typing.Mapping[str, typing.Any]


class Input:
    def __class_getitem__(cls, item):
        return typing.Any


class Output:
    def __class_getitem__(cls, item):
        return cls

    @staticmethod
    def from_input(value):
        return value


class ResourceOptions:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    @staticmethod
    def merge(a, b):
        return b if b is not None else a


class InvokeOptions(ResourceOptions):
    pass


class Resource:
    def __init__(self, *args, **kwargs):
        pass


class CustomResource(Resource):
    pass


class ComponentResource(Resource):
    pass


class ProviderResource(CustomResource):
    pass


class Config:
    def __init__(self, name=None):
        self.name = name

    def get(self, key, default=None):
        return default

    get_object = get_bool = get_int = get_float = get


def input_type(cls):
    return cls


def output_type(cls):
    return cls


def type_token(token):
    return lambda cls: cls


def getter(fn=None, *, name=None):
    if fn is None:
        return lambda f: f
    return fn


def get(obj, name):
    return getattr(obj, "_values", {}).get(name)


def set(obj, name, value):
    obj.__dict__.setdefault("_values", {})[name] = value


def warn(msg):
    pass
