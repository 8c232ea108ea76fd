"""The AWS Query protocol's XML, shared by the emulator's services (CloudFormation in
moto_cfn_server.py, Auto Scaling in autoscaling.py): one way to write a result's fields."""
import datetime as dt
from xml.sax.saxutils import escape


def iso(t):
    """A time as AWS writes it: UTC, milliseconds, `Z`."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def xml_fields(d):
    """A dict as Query XML elements: nested dicts as elements, lists as `<member>`s,
    booleans as `true`/`false`, times in ISO form; None leaves the field out."""
    out = []
    for k, v in d.items():
        if v is None:
            continue
        if isinstance(v, dict):
            out.append(f"<{k}>{xml_fields(v)}</{k}>")
        elif isinstance(v, list):
            out.append(f"<{k}>" + "".join(f"<member>{xml_fields(m)}</member>" for m in v) + f"</{k}>")
        elif isinstance(v, bool):
            out.append(f"<{k}>{'true' if v else 'false'}</{k}>")
        elif isinstance(v, dt.datetime):
            out.append(f"<{k}>{iso(v)}</{k}>")
        else:
            out.append(f"<{k}>{escape(str(v))}</{k}>")
    return "".join(out)
