"""Expected failures of the control plane. Each message says what was wrong and what is valid."""


class ControlError(Exception):
    """Base class: the MCP layer turns these into tool errors with the message as is."""


class UnknownEnvironment(ControlError):
    pass


class NoSelection(ControlError):
    pass


class IntrospectionFailed(ControlError):
    pass


class UnknownField(ControlError):
    pass


class LockedField(ControlError):
    pass


class InvalidValue(ControlError):
    pass


class ProfileError(ControlError):
    pass
