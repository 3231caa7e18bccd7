"""A client for runneld (docs/clients.md): `await runnel.connect(url, token=...)` for asyncio,
`runnel.blocking.connect(url, token=...)` for scripts."""

from .client import (Client, Event, Gap, MapEvent, MapSubscription, Removed, RunnelError, SubscribeOptions,
                     Subscription, Synced, Value, connect)

__all__ = ["Client", "Event", "Gap", "MapEvent", "MapSubscription", "Removed", "RunnelError", "SubscribeOptions",
           "Subscription", "Synced", "Value", "connect"]
