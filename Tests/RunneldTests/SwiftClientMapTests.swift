import RunnelClient
import RunnelJSON
import Synchronization
import Testing

/// The Swift client's map subjects (checklist item 18, docs/clients.md), against real runneld
/// processes as the Python and JavaScript checks run them: `publish` with a `key` and
/// `deleteKey`; a `MapSubscription`'s table equal to the server's once synced, its changes in
/// order (a removal, an expiry past `ttl_s`); resumed after a dropped connection with its table
/// kept; rebuilt whole when it cannot resume (the map deleted and made again; runneld restarted).
@Suite(.serialized, .timeLimit(.minutes(2))) struct SwiftClientMapTests {
    /// `maps.restart` is made at every start, before runneld listens, so a client reconnecting
    /// early after a restart finds the map (a `sub` first would make a plain subject of it).
    static let config = #"""
        auth_tokens = ["client-token"]
        [[subjects]]
        name = "maps.restart"
        kind = "map"
        """#

    let daemon: ChecklistDaemon

    init() throws { daemon = try ChecklistDaemon(toml: Self.config) }

    /// The table equals the server's once synced (the snapshot coming as changes, then
    /// `synced`), then each change is applied in order (a write, a new key, a removal, an expiry);
    /// stages shape the table; a plain `subscribe` gets the writes with their keys; refusals.
    @Test func aMapSubscriptionKeepsTheServersTableAndItsChanges() async throws {
        let admin = try await ClientChecks.connect(daemon)
        let client = try await ClientChecks.connect(daemon)
        _ = try await admin.request("create", ["subject": .string("maps.hosts"), "kind": .string("map")])
        // Before the subscriptions (their snapshot): keys written, one written again, one removed;
        // removing a key the map does not hold is no error.
        #expect(try await admin.publish("maps.hosts", Self.load(1), key: "a", reply: true) == 0)
        try await admin.publish("maps.hosts", Self.load(2), key: "b", reply: true)
        try await admin.publish("maps.hosts", Self.load(3), key: "c", reply: true)
        try await admin.publish("maps.hosts", json: RawJSON(validating: #"{"load": 20}"#), key: "b", reply: true)
        #expect(try await admin.deleteKey("maps.hosts", key: "c", reply: true) == 0)
        #expect(try await admin.deleteKey("maps.hosts", key: "absent", reply: true) == 0)
        let plain = try await client.subscribe("maps.hosts")
        let hosts = try await client.subscribeMap("maps.hosts", SubscribeOptions(conflate: true))
        try await hosts.waitSynced(timeout: ClientChecks.deadline)
        #expect(hosts.isSynced && hosts.table == ["a": Self.load(1), "b": Self.load(20)])
        let opening = try await Self.take(hosts, 3)
        #expect(Set(opening.prefix(2).map(Change.init)) == [.value("a", Self.load(1)), .value("b", Self.load(20))])
        #expect(Change(opening[2]) == .synced)
        let snapshotNewest = opening.prefix(2).compactMap(\.position).compactMap(Self.sequence).max() ?? 0
        let synced = try #require(hosts.position.flatMap(Self.sequence))
        #expect(synced >= snapshotNewest)
        // Then each change, in order, with a position after the last.
        #expect(try await admin.publish("maps.hosts", Self.load(5), key: "a", reply: true) == 2)
        try await admin.publish("maps.hosts", Self.load(6), key: "d", reply: true)
        #expect(try await admin.deleteKey("maps.hosts", key: "b", reply: true) == 2)
        let changes = try await Self.take(hosts, 3)
        #expect(
            changes.map(Change.init) == [.value("a", Self.load(5)), .value("d", Self.load(6)), .removed("b", .deleted)])
        let sequences = changes.compactMap(\.position).compactMap(Self.sequence)
        #expect(sequences.count == 3 && sequences == sequences.sorted() && sequences[0] > synced, "\(sequences)")
        #expect(hosts.table == ["a": Self.load(5), "d": Self.load(6)] && hosts.position == changes[2].position)
        // The server's table: another subscription's snapshot, and the keys `list` counts.
        let other = try await admin.subscribeMap("maps.hosts")
        try await other.waitSynced()
        #expect(other.table == hosts.table)
        let listed = try await admin.request("list", ["prefix": .string("maps.hosts")])
        guard case .array(let entries)? = listed["subjects"], case .object(let entry)? = entries.first else {
            throw HarnessError.badJSON("list: \(listed)")
        }
        #expect(entries.count == 1 && entry["kind"] == .string("map") && entry["keys"] == .number(2))
        // Stages run over the values: the table holds what they make, of the keys they let through.
        let loads = try await client.subscribeMap(
            "maps.hosts", SubscribeOptions(filter: #"$key != "d""#, map: ".load * 2"))
        try await loads.waitSynced()
        #expect(loads.table == ["a": .number(10)])
        // A plain subscription: the snapshot's values and the writes, each with its key; no removal.
        let written = try await ClientChecks.take(plain, 4).compactMap { event -> String? in
            guard case .value(let value) = event else { return nil }
            return value.key
        }
        #expect(Set(written.prefix(2)) == ["a", "b"] && Array(written.dropFirst(2)) == ["a", "d"])
        try await admin.publish("maps.hosts", Self.load(7), key: "e", reply: true)
        guard case .value(let afterRemoval)? = try await ClientChecks.next(plain) else {
            throw HarnessError.badJSON("no value after the removal")
        }
        #expect(afterRemoval.key == "e" && afterRemoval.value == Self.load(7))
        try await Self.expectExpiry(admin, client)
        // Refused here: a pattern, a position to start from; by the server: a map's pub without a
        // key, a key on a subject that is not a map.
        await ClientChecks.expectError("bad_request") { _ = try await client.subscribeMap("maps.*") }
        await ClientChecks.expectError("bad_request") {
            _ = try await client.subscribeMap("maps.hosts", SubscribeOptions(from: hosts.position))
        }
        await ClientChecks.expectError("bad_request") { try await admin.publish("maps.hosts", .number(1), reply: true) }
        await ClientChecks.expectError("bad_request") {
            try await admin.publish("maps.plain", .number(1), key: "a", reply: true)
        }
        await ClientChecks.expectError("bad_request") { try await admin.deleteKey("maps.plain", key: "a", reply: true) }
        await client.close()
        await admin.close()
    }

    /// A key not written for the map's `ttl_s` goes, reason `expired`, about a second later.
    private static func expectExpiry(_ admin: RunnelClient, _ client: RunnelClient) async throws {
        _ = try await admin.request(
            "create", ["subject": .string("maps.ttl"), "kind": .string("map"), "ttl_s": .number(1)])
        let expiring = try await client.subscribeMap("maps.ttl", SubscribeOptions(timestamps: true))
        try await admin.publish("maps.ttl", .string("soon gone"), key: "k", reply: true)
        let events = try await take(expiring, 3)
        #expect(events.map(Change.init) == [.synced, .value("k", .string("soon gone")), .removed("k", .expired)])
        guard case .value(let written) = events[1], case .removed(let gone) = events[2],
            let writtenAt = written.time, let goneAt = gone.time
        else { throw HarnessError.badJSON("no times: \(events)") }
        #expect((900...3000).contains(goneAt - writtenAt), "\(writtenAt) \(goneAt)")
        #expect(expiring.table.isEmpty && gone.position != nil)
    }

    /// A connection dropped without a word (item 12's way): the client resubscribes from its
    /// table's position, the server still holds every change since (`resumed: true`), so the
    /// table is kept and exactly the changes missed are applied to it, in order, with no gap.
    @Test func aDroppedConnectionResumesWithTheTableIntact() async throws {
        let network = try SilentNetwork(upstream: Int(daemon.process.port))
        defer { network.stop() }
        let admin = try await ClientChecks.connect(daemon)
        _ = try await admin.request("create", ["subject": .string("maps.resume"), "kind": .string("map")])
        for (index, key) in ["a", "b", "c"].enumerated() {
            try await admin.publish("maps.resume", .number(Double(index)), key: key, reply: true)
        }
        let reasons = Reasons()
        let atLoss = TableAtLoss()
        let client = try await Self.connect(through: network, reasons, backoff: .seconds(1), atLoss: atLoss)
        let hosts = try await client.subscribeMap("maps.resume", SubscribeOptions(conflate: true, timestamps: true))
        atLoss.watch(hosts)
        #expect(try await Self.take(hosts, 4).map(Change.init).last == .synced)
        try await admin.publish("maps.resume", .number(10), key: "a", reply: true)
        let live = try await Self.take(hosts, 1)
        #expect(
            hosts.position == live[0].position && hosts.table == ["a": 10, "b": 1, "c": 2].mapValues(JSONValue.number))
        network.silence()
        try await admin.publish("maps.resume", .number(11), key: "b", reply: true)
        try await admin.deleteKey("maps.resume", key: "c", reply: true)
        try await admin.publish("maps.resume", .number(12), key: "d", reply: true)
        _ = try await ClientChecks.within(ClientChecks.deadline) {
            while reasons.all.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        // Lost: not current, kept (as the client saw it when it told of the loss; read later, the
        // reconnect may have come first on a busy machine).
        let seen = try #require(atLoss.seen)
        #expect(!seen.synced && seen.table == ["a": 10, "b": 1, "c": 2].mapValues(JSONValue.number))
        try await hosts.waitSynced(timeout: ClientChecks.deadline)
        let missed = try await Self.take(hosts, 4)
        #expect(
            missed.map(Change.init) == [
                .value("b", .number(11)), .removed("c", .deleted), .value("d", .number(12)), .synced,
            ])
        #expect(missed.prefix(3).allSatisfy { $0.time != nil })
        #expect(hosts.table == ["a": 10, "b": 11, "d": 12].mapValues(JSONValue.number))
        #expect(reasons.all.map(\.code) == ["connection_lost"])
        // Live changes go on; the table is the server's.
        try await admin.deleteKey("maps.resume", key: "a", reply: true)
        #expect(try await Self.take(hosts, 1).map(Change.init) == [.removed("a", .deleted)])
        let fresh = try await admin.subscribeMap("maps.resume")
        try await fresh.waitSynced()
        #expect(fresh.table == hosts.table && hosts.table == ["b": 11, "d": 12].mapValues(JSONValue.number))
        await client.close()
        await admin.close()
    }

    /// The map deleted and made again while the connection is dropped: a new epoch, so the
    /// client's `from` cannot resume (`resumed: false`); a gap, then the new snapshot built apart
    /// and swapped in whole at `synced`, its differences the changes: never half a table.
    @Test func aMapMadeAgainIsRebuiltWholeWhenItCannotResume() async throws {
        let network = try SilentNetwork(upstream: Int(daemon.process.port))
        defer { network.stop() }
        let admin = try await ClientChecks.connect(daemon)
        _ = try await admin.request("create", ["subject": .string("maps.rebuild"), "kind": .string("map")])
        for (key, value) in [("a", 1.0), ("b", 2), ("c", 3)] {
            try await admin.publish("maps.rebuild", .number(value), key: key, reply: true)
        }
        let reasons = Reasons()
        let client = try await Self.connect(through: network, reasons, backoff: .milliseconds(100))
        let hosts = try await client.subscribeMap("maps.rebuild")
        #expect(try await Self.take(hosts, 4).map(Change.init).last == .synced)
        let old = hosts.table
        let oldPosition = try #require(hosts.position)
        #expect(old == ["a": 1, "b": 2, "c": 3].mapValues(JSONValue.number))
        // Every table read while it is rebuilt (and once more at the end), each one distinct from
        // the one before.
        let tables = Task {
            var seen: [[String: JSONValue]] = []
            repeat {
                let table = hosts.table
                if seen.last != table { seen.append(table) }
                try? await Task.sleep(for: .milliseconds(1))
            } while !Task.isCancelled
            if seen.last != hosts.table { seen.append(hosts.table) }
            return seen
        }
        network.silence()
        _ = try await admin.request("delete", ["subject": .string("maps.rebuild")])
        _ = try await admin.request("create", ["subject": .string("maps.rebuild"), "kind": .string("map")])
        try await admin.publish("maps.rebuild", .number(2), key: "b", reply: true)  // as it was
        try await admin.publish("maps.rebuild", .number(30), key: "c", reply: true)  // another value
        try await admin.publish("maps.rebuild", .number(4), key: "d", reply: true)  // a new key
        let new: [String: JSONValue] = ["b": 2, "c": 30, "d": 4].mapValues(JSONValue.number)
        let rebuilt = try await Self.take(hosts, 5)
        tables.cancel()
        guard case .gap(let gap) = rebuilt[0] else { throw HarnessError.badJSON("no gap first: \(rebuilt)") }
        #expect(gap.reason == .notResumed && gap.cause?.code == "connection_lost")
        #expect(
            Set(rebuilt[1..<4].map(Change.init)) == [
                .removed("a", .notResumed), .value("c", .number(30)), .value("d", .number(4)),
            ])
        #expect(Change(rebuilt[4]) == .synced && hosts.table == new && hosts.isSynced)
        let seen = await tables.value
        #expect(seen.allSatisfy { $0 == old || $0 == new } && seen.last == new, "\(seen)")
        #expect(hosts.position?.split(separator: ":").first != oldPosition.split(separator: ":").first)
        #expect(
            reasons.all.map { [$0.code, $0.message] } == [
                ["connection_lost", "no answer to a keep-alive ping within 1 s"]
            ])
        // Live changes go on, applied to the new table.
        try await admin.deleteKey("maps.rebuild", key: "b", reply: true)
        try await admin.publish("maps.rebuild", .number(5), key: "e", reply: true)
        #expect(try await Self.take(hosts, 2).map(Change.init) == [.removed("b", .deleted), .value("e", .number(5))])
        #expect(hosts.table == ["c": 30, "d": 4, "e": 5].mapValues(JSONValue.number))
        await client.close()
        await admin.close()
    }

    /// runneld killed and started again: the map (not durable) is made again, empty and in a new
    /// epoch (from the config, before runneld listens), so the subscription cannot resume; the
    /// table is rebuilt as the server's, the key gone reported `notResumed`.
    @Test func aRestartedRunneldGivesARebuiltTable() async throws {
        let reasons = Reasons()
        let admin = try await ClientChecks.connect(daemon)
        let client = try await ClientChecks.connect(daemon) { options in
            options.backoff = (.seconds(2), .seconds(2))
            options.onDisconnect = { reasons.add($0) }
        }
        try await admin.publish("maps.restart", .number(1), key: "a", reply: true)
        try await admin.publish("maps.restart", .number(2), key: "b", reply: true)
        await admin.close()
        let hosts = try await client.subscribeMap("maps.restart")
        #expect(try await Self.take(hosts, 3).map(Change.init).last == .synced)
        let oldPosition = try #require(hosts.position)
        daemon.kill()
        _ = try await ClientChecks.within(ClientChecks.deadline) {
            while reasons.all.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        try daemon.restart()
        let again = try await ClientChecks.connect(daemon)
        try await again.publish("maps.restart", .number(2), key: "b", reply: true)  // as it was
        try await again.publish("maps.restart", .number(3), key: "c", reply: true)  // a new key
        let new: [String: JSONValue] = ["b": 2, "c": 3].mapValues(JSONValue.number)
        // Whether the new keys come in the snapshot (the reconnect after the writes) or after it.
        var changes: [Change] = []
        while !(changes.contains(.synced) && hosts.table == new) {
            guard let event = try await Self.next(hosts) else { throw HarnessError.closed("ended: \(changes)") }
            changes.append(Change(event))
        }
        #expect(changes.first == .gap(.notResumed) && changes.filter { $0 == .synced }.count == 1, "\(changes)")
        #expect(changes.prefix(while: { $0 != .synced }).contains(.removed("a", .notResumed)), "\(changes)")
        #expect(!changes.contains { if case .removed(_, let reason) = $0 { reason != .notResumed } else { false } })
        #expect(hosts.isSynced && reasons.all.map(\.code) == ["connection_lost"])
        #expect(hosts.position?.split(separator: ":").first != oldPosition.split(separator: ":").first)
        await client.close()
        await again.close()
    }

    // MARK: Helpers

    /// A change, for comparing: a write's key and value, a removal's key and reason.
    enum Change: Hashable, CustomStringConvertible {
        case value(String, JSONValue)
        case removed(String, Removed.Reason)
        case synced
        case gap(Gap.Reason)

        init(_ event: MapEvent) {
            switch event {
            case .value(let value): self = .value(value.key ?? "-", value.value)
            case .removed(let removed): self = .removed(removed.key, removed.reason)
            case .synced: self = .synced
            case .gap(let gap): self = .gap(gap.reason)
            }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(description) }

        var description: String {
            switch self {
            case .value(let key, let value): "value \(key) \(value)"
            case .removed(let key, let reason): "removed \(key) \(reason)"
            case .synced: "synced"
            case .gap(let reason): "gap \(reason)"
            }
        }
    }

    static func load(_ load: Double) -> JSONValue { .object(JSONObject([("load", .number(load))])) }

    /// A position's sequence number.
    static func sequence(_ position: String) -> Int? { position.split(separator: ":").last.flatMap { Int($0) } }

    /// A client through `network`, with a 1 s keep-alive (and timeout) and the given reconnect wait.
    static func connect(
        through network: SilentNetwork, _ reasons: Reasons, backoff: Duration, atLoss: TableAtLoss? = nil
    ) async throws -> RunnelClient {
        var options = ClientOptions()
        options.keepalive = .seconds(1)
        options.timeout = .seconds(1)
        options.backoff = (backoff, backoff)
        options.onDisconnect = { reason in
            atLoss?.record()
            reasons.add(reason)
        }
        return try await RunnelClient.connect(
            url: "runnel://127.0.0.1:\(network.port)", token: ChecklistDaemon.token, options: options)
    }

    /// The next `count` events, each within the deadline.
    static func take(_ subscription: MapSubscription, _ count: Int) async throws -> [MapEvent] {
        var events: [MapEvent] = []
        for _ in 0..<count {
            guard let event = try await next(subscription) else {
                throw HarnessError.closed("the subscription ended after \(events.count) events")
            }
            events.append(event)
        }
        return events
    }

    /// The next event (nil at the end), within the deadline.
    static func next(_ subscription: MapSubscription) async throws -> MapEvent? {
        try await ClientChecks.within(ClientChecks.deadline) {
            var iterator = subscription.makeAsyncIterator()
            return try await iterator.next()
        }
    }
}

extension MapEvent {
    /// A write's or a removal's position.
    var position: String? {
        switch self {
        case .value(let value): value.position
        case .removed(let removed): removed.position
        case .synced, .gap: nil
        }
    }

    /// A write's or a removal's time.
    var time: Int64? {
        switch self {
        case .value(let value): value.time
        case .removed(let removed): removed.time
        case .synced, .gap: nil
        }
    }
}

/// A map subscription's state as `onDisconnect` saw it (on the client's reader thread, before any
/// reconnect): whether it was synced, and its table.
final class TableAtLoss: Sendable {
    private let watched = Mutex<MapSubscription?>(nil)
    private let snapshot = Mutex<(synced: Bool, table: [String: JSONValue])?>(nil)

    func watch(_ subscription: MapSubscription) { watched.withLock { $0 = subscription } }

    func record() {
        guard let subscription = watched.withLock({ $0 }) else { return }
        let seen = (subscription.isSynced, subscription.table)
        snapshot.withLock { $0 = $0 ?? seen }
    }

    /// The first loss's state; nil before any.
    var seen: (synced: Bool, table: [String: JSONValue])? { snapshot.withLock { $0 } }
}
