/// The server's counters, as `stats` reports them. Loop thread only.
struct ServerStats {
    /// Subscriptions currently held by all connections.
    var subscriptions = 0
    var published: UInt64 = 0
    var delivered: UInt64 = 0
    var dropped: UInt64 = 0
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
}
