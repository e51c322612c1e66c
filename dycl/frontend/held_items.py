"""List items that follow a tensor a runtime loop changes in place.

A list built in straight-line code holds the very tensors it was given (`hx_list.append(hx)`
at the end of one time step of the published batch ACT); when a later runtime loop writes
rows of that tensor in place (`hx[idx], cx[idx] = cell(...)`), eager's item changes with it.
The loop does not carry such a list: in its body and after it, the item is the tensor the
name holds there, as long as the body keeps it so (it does not rebind the name, nor change
the list); else the loop carries the list as any other.
"""

from __future__ import annotations

from dycl.frontend import lists
from dycl.frontend import values as V


def lists_holding(env: dict, carried: list[str], followers: dict[str, str], read: set[str],
                  rebound: set[str]) -> dict[str, dict[int, str]]:
    """name -> {position: leader}: the lists among `read` built here (items known) that the
    loop does not carry but whose items are the very tensors carried names are bound to: in
    eager, a change through the name in the loop is a change of the item. A name the body
    rebinds (`rebound`) leads none: the list keeps the tensor it held."""
    leaders = {
        env[name].value: name for name in carried
        if name not in followers and name not in rebound and isinstance(env.get(name), V.Dyn) and V.is_tensor_type(env[name].type)
    }
    found: dict[str, dict[int, str]] = {}
    for name, value in env.items():
        if name in carried or name in followers or name not in read or not isinstance(value, lists.StaticList):
            continue
        held = {k: leaders[item.value] for k, item in enumerate(value.items) if isinstance(item, V.Dyn) and item.value in leaders}
        if held:
            found[name] = held
    return found


def with_held_items(c, entry: lists.StaticList, held: dict[int, str], env: dict) -> lists.StaticList:
    """The list `entry` with the items at `held`'s positions the tensors their names hold in `env`."""
    items = [env[held[k]] if k in held else item for k, item in enumerate(entry.items)]
    return lists.static_list(c, items, entry.type)


def still_held(entry: lists.StaticList, end, held: dict[int, str], end_env: dict) -> bool:
    """Whether the body left the list as it found it but for the held items, each still the
    very tensor its name is bound to (else, say, the body rebound the name to a new tensor)."""
    if not (isinstance(end, lists.StaticList) and len(end.items) == len(entry.items)):
        return False
    return all(
        same_tensor(item, end_env.get(held[k])) if k in held else same_tensor(item, entry.items[k])
        for k, item in enumerate(end.items)
    )


def same_tensor(a, b) -> bool:
    return isinstance(a, V.Dyn) and isinstance(b, V.Dyn) and a.value == b.value
