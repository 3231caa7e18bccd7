import RunnelJSON

/// Occupancy (protocol version 1.3): run a feed only while someone watches it.
extension RunnelClient {
    /// Calls `start` when the first subscription to `subject` comes (on this server, by anyone)
    /// and `stop` when the last goes, from `$sys.occupancy.SUBJECT`: on transitions only (a first
    /// count of 0 stops nothing), across reconnects (a count that changed during an outage is a
    /// transition when it comes). The watch ends with the returned task: cancel it, or close the
    /// client. `subject` is a name, not a pattern or a `$` name (`bad_request` otherwise); other
    /// failures are the `subscribe`'s.
    public func whileWatched(
        _ subject: String, start: @escaping @Sendable () async -> Void, stop: @escaping @Sendable () async -> Void
    ) async throws(RunnelError) -> Task<Void, Never> {
        guard !subject.hasPrefix("$"), !subject.split(separator: ".").contains(where: { $0 == "*" || $0 == ">" })
        else {
            throw RunnelError(
                code: "bad_request", message: "whileWatched takes a subject name, not a pattern or a $ name: \(subject)"
            )
        }
        let counts = try await subscribe("$sys.occupancy." + subject)
        return Task {
            var watched = false
            do {
                for try await event in counts {
                    // A gap (a reconnect's) tells no count: the value after it does.
                    guard case .value(let value) = event, case .object(let count) = value.value,
                        case .number(let subscribers)? = count["subscribers"]
                    else { continue }
                    guard (subscribers > 0) != watched else { continue }
                    watched = subscribers > 0
                    await (watched ? start : stop)()
                }
            } catch {
                // Ended by the client's close or its connection's failure: nothing more to watch.
            }
            await counts.unsubscribe()
        }
    }
}
