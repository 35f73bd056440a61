"""pymongo's option validators and constants, under its module name (``pymongo.common``).

Libraries written for pymongo call these functions on their own settings
(``validate_read_preference``, ``validate_boolean``, ``validate_positive_integer``,
...) and read these constants. Each validator takes ``(option, value)`` and returns the
value in the type pymongo's returns (a timeout given in milliseconds comes back in
seconds, as a float), or raises the exception pymongo's raises: ``TypeError`` for a
value of the wrong type, ``ValueError`` for a bad value, ``ConfigurationError`` for an
unknown option. ``URI_OPTIONS_VALIDATOR_MAP``, ``KW_VALIDATORS`` and ``VALIDATORS`` map
option names (lower-case) to them, as pymongo's do; :mod:`mongocore.uri_parser` uses
them to give its options the values pymongo's ``parse_uri`` gives.

The sets of valid values are mongocore's own (the read preference modes,
authentication mechanisms, compressors and codec option values of
:mod:`mongocore.core.uri_options`), and so are the defaults: ``RETRY_WRITES`` is
False, as the retryable-writes specification mongocore implements says, and the wire
version range is the one mongocore speaks. A client does not use these functions: it
validates its options with :mod:`mongocore.core.uri_options`.
"""

from __future__ import annotations

import datetime
import warnings
from collections import OrderedDict, abc
from collections.abc import Mapping, MutableMapping, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Union
from urllib.parse import unquote_plus

from bson import SON
from bson.binary import UuidRepresentation
from bson.codec_options import DatetimeConversion, TypeRegistry
from bson.raw_bson import RawBSONDocument

from mongocore.core.description.settings import (
    DEFAULT_HEARTBEAT_FREQUENCY_MS,
    DEFAULT_LOCAL_THRESHOLD_MS,
    DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    MIN_HEARTBEAT_FREQUENCY_MS,
)
from mongocore.core.description.topology import (
    _MONGODB_VERSION_OF_WIRE,
    CLIENT_MAX_WIRE_VERSION,
    CLIENT_MIN_WIRE_VERSION,
)
from mongocore.core.options import (
    DEFAULT_CONNECT_TIMEOUT_MS,
    DEFAULT_MAX_ADAPTIVE_RETRIES,
    DEFAULT_MAX_CONNECTING,
    DEFAULT_MAX_POOL_SIZE,
    DEFAULT_SRV_SERVICE_NAME,
)
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.core.uri_options import (
    APP_NAME_MAX_BYTES,
    AUTH_MECHANISMS,
    KNOWN_COMPRESSORS,
    READ_PREFERENCE_MODES,
    SERVER_MONITORING_MODES,
    UNICODE_DECODE_ERROR_HANDLERS,
)
from mongocore.driver_info import DriverInfo
from mongocore.errors import ConfigurationError
from mongocore.server_api import ServerApi
from mongocore.write_concern import DEFAULT_WRITE_CONCERN, validate_boolean

if TYPE_CHECKING:
    from mongocore.api.target import _Target as BaseObject

__all__ = [
    "COMMAND_NOT_FOUND_CODES",
    "CONNECT_TIMEOUT",
    "DEFAULT_WRITE_CONCERN",
    "ENABLE_OVERLOAD_RETARGETING",
    "EVENTS_QUEUE_FREQUENCY",
    "HEARTBEAT_FREQUENCY",
    "INTERNAL_URI_OPTION_NAME_MAP",
    "KILL_CURSOR_FREQUENCY",
    "KW_VALIDATORS",
    "LOCAL_THRESHOLD_MS",
    "MAX_ADAPTIVE_RETRIES",
    "MAX_BSON_SIZE",
    "MAX_CONNECTING",
    "MAX_IDLE_TIME_MS",
    "MAX_IDLE_TIME_SEC",
    "MAX_MESSAGE_SIZE",
    "MAX_POOL_SIZE",
    "MAX_SUPPORTED_WIRE_VERSION",
    "MAX_WIRE_VERSION",
    "MAX_WRITE_BATCH_SIZE",
    "MIN_HEARTBEAT_INTERVAL",
    "MIN_POOL_SIZE",
    "MIN_SRV_RESCAN_INTERVAL",
    "MIN_SUPPORTED_SERVER_VERSION",
    "MIN_SUPPORTED_WIRE_VERSION",
    "MIN_WIRE_VERSION",
    "MONGOS_EXHAUST_WIRE_VERSION",
    "NONSPEC_OPTIONS_VALIDATOR_MAP",
    "ORDERED_TYPES",
    "RETRY_READS",
    "RETRY_WRITES",
    "SENSITIVE_OPTIONS_FOR_REPR",
    "SERVER_MONITORING_MODE",
    "SERVER_SELECTION_TIMEOUT",
    "SRV_SERVICE_NAME",
    "TIMEOUT_OPTIONS",
    "UNAUTHORIZED_CODES",
    "URI_OPTIONS_ALIAS_MAP",
    "URI_OPTIONS_DEPRECATION_MAP",
    "URI_OPTIONS_VALIDATOR_MAP",
    "VALIDATORS",
    "WRITE_CONCERN_OPTIONS",
    "BaseObject",
    "Version",
    "check_for_min_version",
    "clean_node",
    "get_validated_options",
    "has_c",
    "partition_node",
    "raise_config_error",
    "redact_auth_mechanism_properties_for_repr",
    "validate",
    "validate_appname_or_none",
    "validate_auth_mechanism",
    "validate_auth_mechanism_properties",
    "validate_auto_encryption_opts_or_none",
    "validate_boolean",
    "validate_boolean_or_string",
    "validate_compressors",
    "validate_datetime_conversion",
    "validate_document_class",
    "validate_driver_or_none",
    "validate_integer",
    "validate_is_callable_or_none",
    "validate_is_document_type",
    "validate_is_mapping",
    "validate_list",
    "validate_list_or_mapping",
    "validate_list_or_none",
    "validate_max_staleness",
    "validate_non_negative_int_or_basestring",
    "validate_non_negative_integer",
    "validate_non_negative_integer_or_none",
    "validate_ok_for_replace",
    "validate_ok_for_update",
    "validate_positive_float",
    "validate_positive_float_or_zero",
    "validate_positive_integer",
    "validate_read_preference",
    "validate_read_preference_mode",
    "validate_read_preference_tags",
    "validate_readable",
    "validate_server_api_or_none",
    "validate_server_monitoring_mode",
    "validate_string",
    "validate_string_or_none",
    "validate_timeout_or_none",
    "validate_timeout_or_none_or_zero",
    "validate_timeout_or_zero",
    "validate_timeoutms",
    "validate_type_registry",
    "validate_tzinfo",
    "validate_unicode_decode_error_handler",
    "validate_uuid_representation",
    "validate_zlib_compression_level",
]

Validator = Callable[..., Any]

# --- constants ------------------------------------------------------------------------

ORDERED_TYPES: Sequence[type[Any]] = (SON, OrderedDict)

# Limits assumed until a server announces its own (its hello reply).
MAX_BSON_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE = 48 * 1000 * 1000
MIN_WIRE_VERSION = 0
MAX_WIRE_VERSION = 0
MAX_WRITE_BATCH_SIZE = 100_000

#: The wire versions (and the oldest server) this version of mongocore speaks.
MIN_SUPPORTED_WIRE_VERSION = CLIENT_MIN_WIRE_VERSION
MAX_SUPPORTED_WIRE_VERSION = CLIENT_MAX_WIRE_VERSION
MIN_SUPPORTED_SERVER_VERSION = _MONGODB_VERSION_OF_WIRE[CLIENT_MIN_WIRE_VERSION]
#: MongoDB 7.1, whose mongos continues an exhaust getMore stream (pymongo's constant;
#: mongocore does not use exhaust cursors).
MONGOS_EXHAUST_WIRE_VERSION = 22

# Defaults, in seconds where pymongo gives seconds.
HEARTBEAT_FREQUENCY = DEFAULT_HEARTBEAT_FREQUENCY_MS // 1000
KILL_CURSOR_FREQUENCY = 1
EVENTS_QUEUE_FREQUENCY = 1
SERVER_SELECTION_TIMEOUT = DEFAULT_SERVER_SELECTION_TIMEOUT_MS // 1000
MIN_HEARTBEAT_INTERVAL = MIN_HEARTBEAT_FREQUENCY_MS / 1000
MIN_SRV_RESCAN_INTERVAL = 60
CONNECT_TIMEOUT = DEFAULT_CONNECT_TIMEOUT_MS / 1000
MAX_POOL_SIZE = DEFAULT_MAX_POOL_SIZE
MIN_POOL_SIZE = 0
MAX_CONNECTING = DEFAULT_MAX_CONNECTING
MAX_IDLE_TIME_MS: Optional[int] = None
MAX_IDLE_TIME_SEC: Optional[int] = None
WAIT_QUEUE_TIMEOUT: Optional[int] = None
LOCAL_THRESHOLD_MS = DEFAULT_LOCAL_THRESHOLD_MS
#: False: the retryable-writes specification mongocore implements (1.0) says
#: retryWrites "MUST default to false" (pymongo's is True; docs/from-pymongo.md).
RETRY_WRITES = False
RETRY_READS = True
SRV_SERVICE_NAME = DEFAULT_SRV_SERVICE_NAME
SERVER_MONITORING_MODE = "auto"
#: Client backpressure is not implemented: no adaptive retries (pymongo's is 2).
MAX_ADAPTIVE_RETRIES = DEFAULT_MAX_ADAPTIVE_RETRIES
ENABLE_OVERLOAD_RETARGETING = False

#: The server's code for a command it does not know.
COMMAND_NOT_FOUND_CODES: Sequence[int] = (59,)
#: Codes of an unauthorized command (GridFS ignores them when it creates its indexes on
#: a secondary).
UNAUTHORIZED_CODES: Sequence[int] = (13, 16547, 16548)

#: Options whose values never appear in a representation of a client's settings.
SENSITIVE_OPTIONS_FOR_REPR = frozenset(
    ["proxyusername", "proxypassword", "tlscertificatekeyfilepassword"]
)
#: The write concern options, lower-case.
WRITE_CONCERN_OPTIONS = frozenset(["w", "wtimeout", "wtimeoutms", "fsync", "j", "journal"])

#: The uuidRepresentation names and the numbers bson gives them (private in pymongo,
#: but libraries read it to turn a parsed URI's number back into its name).
_UUID_REPRESENTATIONS = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonLegacy": UuidRepresentation.PYTHON_LEGACY,
    "javaLegacy": UuidRepresentation.JAVA_LEGACY,
    "csharpLegacy": UuidRepresentation.CSHARP_LEGACY,
}

#: authMechanismProperties keys a connection string may give, and those safe to show.
_MECHANISM_PROPERTIES = frozenset(
    [
        "SERVICE_NAME",
        "SERVICE_HOST",
        "CANONICALIZE_HOST_NAME",
        "SERVICE_REALM",
        "AWS_SESSION_TOKEN",
        "ENVIRONMENT",
        "TOKEN_RESOURCE",
    ]
)
_SHOWN_MECHANISM_PROPERTIES = frozenset(
    [
        "ALLOWED_HOSTS",
        "CANONICALIZE_HOST_NAME",
        "ENVIRONMENT",
        "SERVICE_HOST",
        "SERVICE_NAME",
        "SERVICE_REALM",
        "TOKEN_RESOURCE",
    ]
)


# --- host names ---------------------------------------------------------------------


def partition_node(node: str) -> tuple[str, int]:
    """``"host:port"`` as ``(host, port)``; the port defaults to 27017 and an IPv6
    literal loses its brackets."""
    host, port = node, 27017
    colon = node.rfind(":")
    if colon != -1:
        host, port = node[:colon], int(node[colon + 1 :])
    if host.startswith("["):
        host = host[1:-1]
    return host, port


def clean_node(node: str) -> tuple[str, int]:
    """:func:`partition_node` with the host name in lower case (DNS names are not
    case-sensitive; a server's own spelling must not look like another server)."""
    host, port = partition_node(node)
    return host.lower(), port


def raise_config_error(
    key: str, suggestions: Optional[list[str]] = None, from_uri: bool = False
) -> NoReturn:
    """Raise the ConfigurationError of an unknown option (not named when it came from a
    connection string, where a mistyped key may be a credential)."""
    message = "Unknown option." if from_uri else f"Unknown option: {key}."
    if suggestions:
        message += f" Did you mean one of ({', '.join(suggestions)})?"
    raise ConfigurationError(message)


# --- scalar validators ----------------------------------------------------------------


def validate_boolean_or_string(option: str, value: Any) -> bool:
    """True or False, or the strings ``"true"`` and ``"false"``."""
    if isinstance(value, str):
        if value not in ("true", "false"):
            raise ValueError(f"The value of {option} must be 'true' or 'false', not {value!r}")
        return value == "true"
    return validate_boolean(option, value)


def validate_integer(option: str, value: Any) -> int:
    """An int, or a string of one."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"The value of {option} must be an integer, not {value!r}") from None
    raise TypeError(f"Wrong type for {option}, value must be an integer, not {type(value)}")


def validate_positive_integer(option: str, value: Any) -> int:
    """An integer greater than 0."""
    number = validate_integer(option, value)
    if number <= 0:
        raise ValueError(f"The value of {option} must be a positive integer, not {number}")
    return number


def validate_non_negative_integer(option: str, value: Any) -> int:
    """An integer, 0 or greater."""
    number = validate_integer(option, value)
    if number < 0:
        raise ValueError(f"The value of {option} must be a non negative integer, not {number}")
    return number


def validate_non_negative_integer_or_none(option: str, value: Any) -> Optional[int]:
    return None if value is None else validate_non_negative_integer(option, value)


def validate_string(option: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"Wrong type for {option}, value must be an instance of str, not {type(value)}")


def validate_string_or_none(option: str, value: Any) -> Optional[str]:
    return None if value is None else validate_string(option, value)


def validate_readable(option: str, value: Any, from_uri: bool = False) -> Optional[str]:
    """The name of a file that can be opened for reading (a TLS file option)."""
    if value is None:
        return None
    path = validate_string(option, value)
    try:
        open(path).close()
    except OSError as exc:
        if not from_uri:
            raise
        # A connection string's path may say more than the application wants shown.
        raise type(exc)(exc.errno, f"The {option} file is not readable") from None
    return path


def validate_non_negative_int_or_basestring(option: Any, value: Any) -> Union[int, str]:
    """A non-negative integer, a string of one, or any other string (a ``w`` tag)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            return value
        return validate_non_negative_integer(option, number)
    raise TypeError(
        f"Wrong type for {option}, value must be a non negative integer or a string,"
        f" not {type(value)}"
    )


def validate_positive_float(option: str, value: Any) -> float:
    """A number (or its string) greater than 0 and less than one billion."""
    message = f"{option} must be an integer or float"
    try:
        number = float(value)
    except ValueError:
        raise ValueError(message) from None
    except TypeError:
        raise TypeError(message) from None
    # One billion stands for infinity, as in pymongo.
    if not 0 < number < 1e9:
        raise ValueError(f"{option} must be greater than 0 and less than one billion")
    return number


def validate_positive_float_or_zero(option: str, value: Any) -> float:
    if value in (0, "0"):
        return 0
    return validate_positive_float(option, value)


def validate_timeout_or_none(option: str, value: Any) -> Optional[float]:
    """Milliseconds in, seconds out; None stays None."""
    if value is None:
        return None
    return validate_positive_float(option, value) / 1000.0


def validate_timeout_or_zero(option: str, value: Any) -> float:
    """Milliseconds in, seconds out; 0 is valid, None is not."""
    if value is None:
        raise ConfigurationError(f"{option} cannot be None")
    if value in (0, "0"):
        return 0
    return validate_positive_float(option, value) / 1000.0


def validate_timeout_or_none_or_zero(option: Any, value: Any) -> Optional[float]:
    """Milliseconds in, seconds out; 0 means no timeout, as None does."""
    if value in (None, 0, "0"):
        return None
    return validate_positive_float(option, value) / 1000.0


def validate_timeoutms(option: Any, value: Any) -> Optional[float]:
    """timeoutMS: milliseconds in, seconds out; 0 (no limit) stays 0."""
    if value is None:
        return None
    return validate_positive_float_or_zero(option, value) / 1000.0


def validate_max_staleness(option: str, value: Any) -> int:
    """maxStalenessSeconds: a positive integer, or -1 for no maximum."""
    if value in (-1, "-1"):
        return -1
    return validate_positive_integer(option, value)


# --- read preferences, authentication, codec options ------------------------------------


def validate_read_preference(dummy: Any, value: Any) -> ReadPreference:
    """A read preference object (``Primary()``, ``ReadPreference.SECONDARY``, ...)."""
    if not isinstance(value, ReadPreference):
        raise TypeError(f"{value!r} is not a read preference")
    return value


def validate_read_preference_mode(dummy: Any, value: Any) -> str:
    """A read preference mode's name (``"secondaryPreferred"``), returned as given."""
    if value not in READ_PREFERENCE_MODES:
        raise ValueError(
            f"Not a valid read preference. Must be one of: {', '.join(READ_PREFERENCE_MODES)}"
        )
    return str(value)


def validate_read_preference_tags(
    name: str, value: Any, from_uri: bool = False
) -> list[dict[str, str]]:
    """readPreferenceTags: one ``"k:v,k2:v2"`` string or a list of them, as a list of
    tag sets; the empty string is the empty tag set."""
    values = value if isinstance(value, list) else [value]
    tag_sets: list[dict[str, str]] = []
    for tag_set in values:
        if tag_set == "":
            tag_sets.append({})
            continue
        try:
            tags: dict[str, str] = {}
            for tag in tag_set.split(","):
                key, tag_value = tag.split(":")
                tags[unquote_plus(key)] = unquote_plus(tag_value)
        except Exception:
            if from_uri:
                raise ValueError(f"Invalid read preference tags value for {name}") from None
            raise ValueError(f"{tag_set!r} not a valid value for {name}") from None
        tag_sets.append(tags)
    return tag_sets


def validate_auth_mechanism(option: str, value: Any) -> str:
    """One of the authentication mechanisms mongocore knows."""
    if value not in AUTH_MECHANISMS:
        raise ValueError(f"{option} must be in {AUTH_MECHANISMS}")
    return str(value)


def redact_auth_mechanism_properties_for_repr(value: Any) -> Any:
    """authMechanismProperties with every value that may be a secret replaced."""
    if not isinstance(value, dict):
        return value
    return {
        key: prop if str(key).upper() in _SHOWN_MECHANISM_PROPERTIES else "<redacted>"
        for key, prop in value.items()
    }


def validate_auth_mechanism_properties(option: str, value: Any) -> dict[str, Any]:
    """authMechanismProperties: a ``"KEY:value,..."`` string or a dict."""
    properties: dict[str, Any] = {}
    if not isinstance(value, str):
        if not isinstance(value, dict):
            raise TypeError(
                "Auth mechanism properties must be given as a string or a dictionary,"
                f" not {type(value)}"
            )
        for key, prop in value.items():
            if isinstance(prop, str):
                properties[key] = prop
            elif isinstance(prop, bool):
                properties[key] = str(prop).lower()
            elif key == "ALLOWED_HOSTS" and isinstance(prop, list):
                properties[key] = prop
            else:
                raise TypeError(f"Invalid type for auth mechanism property {key}, {type(prop)}")
        return properties
    for pair in unquote_plus(value).split(","):
        key, _, prop = pair.partition(":")
        if not prop:
            raise ValueError("Malformed auth mechanism properties")
        if key not in _MECHANISM_PROPERTIES:
            if "AWS_SESSION_TOKEN" in key:  # a malformed pair may hold the token itself
                raise ValueError(
                    "auth mechanism properties must be key:value pairs like"
                    " AWS_SESSION_TOKEN:<token>"
                )
            raise ValueError(
                f"{key} is not a supported auth mechanism property. Must be one of"
                f" {tuple(sorted(_MECHANISM_PROPERTIES))}"
            )
        if key == "CANONICALIZE_HOST_NAME":
            properties[key] = _canonicalize_host_name(prop)
        else:
            properties[key] = prop
    return properties


def _canonicalize_host_name(value: str) -> Union[str, bool]:
    # GSSAPI's CANONICALIZE_HOST_NAME: none, forward, forwardAndReverse, or a boolean.
    if value in ("none", "forward", "forwardAndReverse"):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(
        "CANONICALIZE_HOST_NAME must be one of 'none', 'forward', 'forwardAndReverse',"
        f" 'true' or 'false', not {value!r}"
    )


def validate_uuid_representation(dummy: Any, value: Any, from_uri: bool = False) -> int:
    """A uuidRepresentation name, as bson's number for it."""
    try:
        return _UUID_REPRESENTATIONS[value]
    except KeyError:  # (an unhashable value is a TypeError, as in pymongo)
        names = tuple(_UUID_REPRESENTATIONS)
        if from_uri:
            raise ValueError(f"Invalid UUID representation. Must be one of {names}") from None
        raise ValueError(
            f"{value} is an invalid UUID representation. Must be one of {names}"
        ) from None


def validate_unicode_decode_error_handler(dummy: Any, value: str) -> str:
    if value not in UNICODE_DECODE_ERROR_HANDLERS:
        raise ValueError(
            f"Invalid Unicode decode error handler. Must be one of {UNICODE_DECODE_ERROR_HANDLERS}"
        )
    return value


def validate_tzinfo(dummy: Any, value: Any) -> Optional[datetime.tzinfo]:
    if value is not None and not isinstance(value, datetime.tzinfo):
        raise TypeError(f"{value} must be an instance of datetime.tzinfo")
    return value


def validate_datetime_conversion(
    option: Any, value: Any, from_uri: bool = False
) -> Optional[DatetimeConversion]:
    """A DatetimeConversion, its name or its number; None is DATETIME."""
    if value is None:
        return DatetimeConversion.DATETIME
    if isinstance(value, str):
        if value.isdigit():
            return DatetimeConversion(int(value))
        try:
            return DatetimeConversion[value]
        except KeyError:
            # KeyError, as pymongo's: get_validated_options lets it through.
            if from_uri:
                raise KeyError(f"Invalid {option} value") from None
            raise
    if isinstance(value, int):
        return DatetimeConversion(value)
    raise TypeError(
        f"{option} must be a str or int representing DatetimeConversion, not {type(value)}"
    )


def validate_document_class(option: str, value: Any) -> Any:
    """A MutableMapping class (``dict``, ``SON``, a parameterized ``dict[str, Any]``) or
    RawBSONDocument."""
    origin = getattr(value, "__origin__", value)
    try:
        is_mapping = issubclass(origin, abc.MutableMapping)
    except TypeError:
        is_mapping = False
    if not is_mapping and not (isinstance(value, type) and issubclass(value, RawBSONDocument)):
        raise TypeError(
            f"{option} must be dict, bson.son.SON, bson.raw_bson.RawBSONDocument, or a"
            " subclass of collections.MutableMapping"
        )
    return value


def validate_type_registry(option: Any, value: Any) -> Optional[TypeRegistry]:
    if value is not None and not isinstance(value, TypeRegistry):
        raise TypeError(f"{option} must be an instance of {TypeRegistry}")
    return value


def validate_server_monitoring_mode(option: str, value: str, from_uri: bool = False) -> str:
    if value not in frozenset(SERVER_MONITORING_MODES):  # (a list is a TypeError, as in pymongo)
        shown = option if from_uri else f"{option}={value!r}"
        raise ValueError(f'{shown} is invalid. Must be one of "auto", "stream", or "poll"')
    return value


def validate_appname_or_none(option: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    validate_string(option, value)
    if len(value.encode("utf-8")) > APP_NAME_MAX_BYTES:
        raise ValueError(f"{option} must be <= {APP_NAME_MAX_BYTES} bytes")
    return str(value)


def validate_compressors(dummy: Any, value: Any, from_uri: bool = False) -> list[str]:
    """compressors: a comma-separated string or a list of names. Those mongocore cannot
    use (unknown, or their library is not installed) are left out, with a warning."""
    from mongocore.core.compression import available_compressors  # noqa: PLC0415

    names = value.split(",") if isinstance(value, str) else list(value)
    usable = available_compressors()
    result = []
    for name in names:
        if name in usable:
            result.append(name)
        elif name in KNOWN_COMPRESSORS:
            warnings.warn(
                f"Wire protocol compression with {name} is not available: install its"
                " library to use it",
                stacklevel=2,
            )
        else:
            shown = "" if from_uri else f": {name}"
            warnings.warn(f"Unsupported compressor{shown}", stacklevel=2)
    return result


def validate_zlib_compression_level(option: str, value: Any, from_uri: bool = False) -> int:
    try:
        level = int(value)
    except Exception:
        shown = "" if from_uri else f", not {value!r}"
        raise TypeError(f"{option} must be an integer{shown}") from None
    if not -1 <= level <= 9:
        raise ValueError(f"{option} must be between -1 and 9, not {level}.")
    return level


# --- objects and documents --------------------------------------------------------------


def validate_driver_or_none(option: Any, value: Any) -> Optional[DriverInfo]:
    if value is not None and not isinstance(value, DriverInfo):
        raise TypeError(f"{option} must be an instance of DriverInfo")
    return value


def validate_server_api_or_none(option: Any, value: Any) -> Optional[ServerApi]:
    if value is not None and not isinstance(value, ServerApi):
        raise TypeError(f"{option} must be an instance of ServerApi, not {type(value)}")
    return value


def validate_is_callable_or_none(option: Any, value: Any) -> Optional[Callable[..., Any]]:
    if value is not None and not callable(value):
        raise TypeError(f"{option} must be a callable, not {type(value)}")
    return value  # type: ignore[no-any-return]  # None or a callable


def validate_auto_encryption_opts_or_none(option: Any, value: Any) -> None:
    """None: mongocore has no client-side field level encryption."""
    if value is not None:
        raise ConfigurationError(
            f"{option}: client-side field level encryption is not supported by mongocore"
        )


def validate_list(option: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{option} must be a list, not {type(value)}")
    return value


def validate_list_or_none(option: Any, value: Any) -> Optional[list[Any]]:
    return None if value is None else validate_list(option, value)


def validate_list_or_mapping(option: Any, value: Any) -> None:
    if not isinstance(value, (abc.Mapping, list)):
        raise TypeError(
            f"{option} must either be a list or an instance of dict, bson.son.SON, or any"
            " other type that inherits from collections.Mapping"
        )


def validate_is_mapping(option: str, value: Any) -> None:
    if not isinstance(value, abc.Mapping):
        raise TypeError(
            f"{option} must be an instance of dict, bson.son.SON, or any other type that"
            " inherits from collections.Mapping"
        )


def validate_is_document_type(option: str, value: Any) -> None:
    if not isinstance(value, (abc.MutableMapping, RawBSONDocument)):
        raise TypeError(
            f"{option} must be an instance of dict, bson.son.SON,"
            " bson.raw_bson.RawBSONDocument, or a type that inherits from"
            " collections.MutableMapping"
        )


def validate_ok_for_replace(replacement: Mapping[str, Any]) -> None:
    """A replacement document: a mapping whose first key is no ``$`` operator."""
    validate_is_mapping("replacement", replacement)
    if replacement and not isinstance(replacement, RawBSONDocument):
        first = next(iter(replacement))
        if first.startswith("$"):
            raise ValueError("replacement can not include $ operators")


def validate_ok_for_update(update: Any) -> None:
    """An update: a non-empty document of ``$`` operators, or a pipeline."""
    validate_list_or_mapping("update", update)
    if not update:
        raise ValueError("update cannot be empty")
    if not isinstance(update, list) and not next(iter(update)).startswith("$"):
        raise ValueError("update only works with $ operators")


def _validate_event_listeners(option: Any, listeners: Any) -> Any:
    from mongocore.core.events import check_listeners  # noqa: PLC0415

    if not isinstance(listeners, abc.Sequence):
        raise TypeError(f"{option} must be a list or tuple")
    check_listeners(listeners)
    return listeners


# --- the option tables ---------------------------------------------------------------

#: Option -> its other spellings.
URI_OPTIONS_ALIAS_MAP: dict[str, list[str]] = {"tls": ["ssl"]}

#: Lower-case connection string option -> its validator.
URI_OPTIONS_VALIDATOR_MAP: dict[str, Validator] = {
    "appname": validate_appname_or_none,
    "authmechanism": validate_auth_mechanism,
    "authmechanismproperties": validate_auth_mechanism_properties,
    "authsource": validate_string,
    "compressors": validate_compressors,
    "connecttimeoutms": validate_timeout_or_none_or_zero,
    "directconnection": validate_boolean_or_string,
    "heartbeatfrequencyms": validate_timeout_or_none,
    "journal": validate_boolean_or_string,
    "localthresholdms": validate_positive_float_or_zero,
    "maxidletimems": validate_timeout_or_none,
    "maxconnecting": validate_positive_integer,
    "maxpoolsize": validate_non_negative_integer_or_none,
    "maxstalenessseconds": validate_max_staleness,
    "readconcernlevel": validate_string_or_none,
    "readpreference": validate_read_preference_mode,
    "readpreferencetags": validate_read_preference_tags,
    "replicaset": validate_string_or_none,
    "retryreads": validate_boolean_or_string,
    "retrywrites": validate_boolean_or_string,
    "loadbalanced": validate_boolean_or_string,
    "serverselectiontimeoutms": validate_timeout_or_zero,
    "sockettimeoutms": validate_timeout_or_none_or_zero,
    "tls": validate_boolean_or_string,
    "tlsallowinvalidcertificates": validate_boolean_or_string,
    "tlsallowinvalidhostnames": validate_boolean_or_string,
    "tlscafile": validate_readable,
    "tlscertificatekeyfile": validate_readable,
    "tlscertificatekeyfilepassword": validate_string_or_none,
    "tlsdisableocspendpointcheck": validate_boolean_or_string,
    "tlsinsecure": validate_boolean_or_string,
    "w": validate_non_negative_int_or_basestring,
    "wtimeoutms": validate_non_negative_integer,
    "zlibcompressionlevel": validate_zlib_compression_level,
    "srvservicename": validate_string,
    "srvmaxhosts": validate_non_negative_integer,
    "srvallowedhostssuffix": validate_string,
    "timeoutms": validate_timeoutms,
    "servermonitoringmode": validate_server_monitoring_mode,
    "maxadaptiveretries": validate_non_negative_integer,
    "enableoverloadretargeting": validate_boolean_or_string,
}

#: Lower-case options that are pymongo's own (not the URI options specification's).
NONSPEC_OPTIONS_VALIDATOR_MAP: dict[str, Validator] = {
    "connect": validate_boolean_or_string,
    "driver": validate_driver_or_none,
    "server_api": validate_server_api_or_none,
    "fsync": validate_boolean_or_string,
    "minpoolsize": validate_non_negative_integer,
    "tlscrlfile": validate_readable,
    "tz_aware": validate_boolean_or_string,
    "unicode_decode_error_handler": validate_unicode_decode_error_handler,
    "uuidrepresentation": validate_uuid_representation,
    "waitqueuemultiple": validate_non_negative_integer_or_none,
    "waitqueuetimeoutms": validate_timeout_or_none,
    "datetime_conversion": validate_datetime_conversion,
}

#: MongoClient keyword arguments that are not connection string options.
KW_VALIDATORS: dict[str, Validator] = {
    "document_class": validate_document_class,
    "type_registry": validate_type_registry,
    "read_preference": validate_read_preference,
    "event_listeners": _validate_event_listeners,
    "tzinfo": validate_tzinfo,
    "username": validate_string_or_none,
    "password": validate_string_or_none,
    "server_selector": validate_is_callable_or_none,
    "srv_host_validator": validate_is_callable_or_none,
    "auto_encryption_opts": validate_auto_encryption_opts_or_none,
    "authoidcallowedhosts": validate_list,
    "max_adaptive_retries": validate_non_negative_integer,
    "enable_overload_retargeting": validate_boolean_or_string,
}

#: An option's other spelling -> the name options are kept under.
INTERNAL_URI_OPTION_NAME_MAP: dict[str, str] = {"ssl": "tls"}

#: Deprecated option -> ("renamed", new name) or ("removed", advice); none today.
URI_OPTIONS_DEPRECATION_MAP: dict[str, tuple[str, str]] = {}

URI_OPTIONS_VALIDATOR_MAP.update(NONSPEC_OPTIONS_VALIDATOR_MAP)
for _option, _aliases in URI_OPTIONS_ALIAS_MAP.items():
    for _alias in _aliases:
        URI_OPTIONS_VALIDATOR_MAP.setdefault(_alias, URI_OPTIONS_VALIDATOR_MAP[_option])

#: Every option, of the connection string or the keywords -> its validator.
VALIDATORS: dict[str, Validator] = {**URI_OPTIONS_VALIDATOR_MAP, **KW_VALIDATORS}

#: The timeout options (lower-case).
TIMEOUT_OPTIONS: list[str] = [
    "connecttimeoutms",
    "heartbeatfrequencyms",
    "maxidletimems",
    "maxstalenessseconds",
    "serverselectiontimeoutms",
    "sockettimeoutms",
    "waitqueuetimeoutms",
]


def _validator(
    key: str, validators: Mapping[str, Validator], normed_key: str, from_uri: bool = False
) -> Validator:
    validator = validators.get(normed_key)
    if validator is None:
        from difflib import get_close_matches  # noqa: PLC0415 - only for the error

        raise_config_error(key, get_close_matches(normed_key, validators, cutoff=0.2), from_uri)
    return validator


def validate(option: str, value: Any) -> tuple[str, Any]:
    """``(option, validated value)``, for any option a client takes."""
    return option, _validator(option, VALIDATORS, option.lower())(option, value)


def _takes_from_uri(validator: Validator) -> bool:
    return "from_uri" in validator.__code__.co_varnames[: validator.__code__.co_argcount]


def get_validated_options(
    options: Mapping[str, Any], warn: bool = True, from_uri: bool = False
) -> MutableMapping[str, Any]:
    """The connection string options ``options``, validated, under their lower-case
    names. An invalid one is left out with a warning when ``warn``; otherwise it raises."""
    validated: dict[str, Any] = {}
    for option, value in options.items():
        key = option.lower()
        try:
            validator = _validator(option, URI_OPTIONS_VALIDATOR_MAP, key, from_uri)
            if from_uri and _takes_from_uri(validator):
                result = validator(option, value, from_uri=True)
            else:
                result = validator(option, value)
        except (ValueError, TypeError, ConfigurationError) as exc:
            if warn and not (
                key == "authmechanismproperties" and "CANONICALIZE_HOST_NAME" in str(exc)
            ):
                warnings.warn(str(exc), stacklevel=2)
                continue
            raise
        validated[key] = result
    return validated


# --- the rest -------------------------------------------------------------------------


def has_c() -> bool:
    """False: mongocore has no C extension of its own (bson's is pymongo's)."""
    return False


class Version(tuple[int, ...]):
    """A server or package version that compares as a tuple of numbers:
    ``Version.from_string("7.0.2") >= Version(6, 0)``."""

    def __new__(cls, *version: int) -> Version:
        numbers = list(version) + [0] * (4 - len(version))
        return super().__new__(cls, tuple(numbers))

    @classmethod
    def from_string(cls, version_string: str) -> Version:
        """``"7.0.2"``, ``"7.1.0-rc1"`` (earlier than 7.1.0), ``"3.2.0-97-g1ef94fe"``
        (later than 3.2.0), ``"4.0+"``, ``"4.4.dev"`` (earlier)."""
        text, modifier, next_patch = version_string, 0, False
        if text.endswith("+"):
            text, modifier = text[:-1], 1
        elif text.endswith("-pre-"):
            text, modifier = text[:-5], -1
        elif text.endswith("-"):
            text, modifier = text[:-1], -1
        if ".dev" in text:
            text, modifier = text[: text.find(".dev")], -1
        if "-rc" in text:
            text, modifier = text[: text.find("-rc")], -1
        elif "-" in text:  # git describe: commits after the tag
            text, modifier, next_patch = text[: text.find("-")], -1, True
        numbers = [int(part) for part in text.split(".")]
        numbers += [0] * (3 - len(numbers))
        if next_patch:
            numbers[-1] += 1
        return Version(*numbers, modifier)

    @classmethod
    def from_version_array(cls, version_array: Any) -> Version:
        """buildInfo's ``versionArray`` (a negative last part: a pre-release)."""
        numbers = list(version_array)
        if numbers[-1] < 0:
            numbers[-1] = -1
        numbers += [0] * (3 - len(numbers))
        return Version(*numbers)

    def at_least(self, *other_version: Any) -> bool:
        return self >= Version(*other_version)

    def __str__(self) -> str:
        return ".".join(str(part) for part in self)


def check_for_min_version(package_name: str) -> tuple[str, str, bool]:
    """``(installed version, required version, installed >= required)`` of one of
    mongocore's requirements."""
    installed = metadata.version(package_name)
    requirements = metadata.requires("mongocore") or []
    matching = [r for r in requirements if r.startswith(package_name)]
    if not matching:
        raise ValueError(f"{package_name} is not a requirement of mongocore")
    requirement = matching[0].split(";")[0]
    required = requirement[requirement.find(">=") + 2 :].split(",")[0].strip()
    return installed, required, Version.from_string(installed) >= Version.from_string(required)


def __getattr__(name: str) -> Any:
    # BaseObject is the class Database and Collection share; it loads with them.
    if name == "BaseObject":
        from mongocore.api.target import _Target  # noqa: PLC0415

        return _Target
    raise AttributeError(f"module 'mongocore.common' has no attribute {name!r}")
