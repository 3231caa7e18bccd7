import Runnel
import RunnelJSON
import RunnelProtocol

/// A clustered node's part of the cluster's one set of subjects (docs/protocol.md, "Clusters"):
/// this node's creating, ending and deleting of subjects written to the key-value bucket (on
/// the link's worker, answered to the loop), and every change of the bucket, this node's own
/// included, made to the local entries, in the epochs the definitions name. It keeps what this
/// node knows of the definitions (`ClusterDefinitions`) and the retained subjects it is making,
/// with the publishes waiting for their streams; the rest it asks of its store
/// (`ClusterDefinitionHost`).
///
/// Thread rules: loop thread only, but for the worker's jobs, which use only the link's parts
/// that never change and the values handed to them. Lifetime rule: owned by its
/// `ClusterSubjectStore`, which it holds unowned (the store outlives the loop that runs the
/// worker's answers); each of the worker's jobs holds it until answered.
final class ClusterDefinitionSync: @unchecked Sendable {
    private let local: MemorySubjectStore
    private let link: ClusterLink
    private unowned let host: any ClusterDefinitionHost
    /// The definition each local entry was made from, and the bucket's revisions.
    private var definitions = ClusterDefinitions()
    /// Retained subjects this node is making, by epoch, with the publishes waiting for their
    /// streams.
    private var awaitingStreams: [String: [() -> Void]] = [:]
    /// Told of each subject made here from the cluster's definition (`OccupancyTracker`'s
    /// patterns watch those made by other nodes from then on).
    var adopted: (String) -> Void = { _ in }

    /// The sync of `host`, whose entries are `local`'s and which shares them through `link`.
    init(local: MemorySubjectStore, link: ClusterLink, host: any ClusterDefinitionHost) {
        self.local = local
        self.link = link
        self.host = host
    }

    // MARK: This node's changes

    /// Makes `name` as `definition` says, here at once, in a new epoch, and in the cluster: a
    /// retained subject's stream first, then its definition, which succeeds only if no node
    /// defined `name` before. If one did, in the same shape, this node takes that definition (a
    /// retained subject's entry made here ends and one in that definition's epoch takes its
    /// place; a plain subject's epoch is the node's own, so it stays); in another shape, the
    /// reply is `kind_mismatch`. The reply waits for the answer (`whenWritten`).
    func create(_ name: String, _ definition: ClusterDefinition) -> SubjectEntry {
        // Its stream does not exist yet: consumed, and published to, once it does.
        let entry = adopt(name, definition, consuming: false)
        if entry.retainsValues { awaitingStreams[definition.epoch] = [] }
        let change = host.beginChange()
        let link = link
        link.worker.run {
            Self.write(definition, of: name, through: link)
        } then: { [self] outcome in
            created(name, definition, outcome: outcome, change: change)
        }
        return entry
    }

    /// What writing a new definition came to.
    private enum CreateOutcome: Sendable {
        case created
        case exists(ClusterDefinition)
        case failed(String)
    }

    /// Writes `definition` (worker thread).
    private static func write(_ definition: ClusterDefinition, of name: String, through link: ClusterLink)
        -> CreateOutcome
    {
        let stream = link.streamName(epoch: definition.epoch)
        do throws(NATSError) {
            let key = ClusterDefinition.key(of: name)
            if definition.kind != .subject { try link.addStream(for: definition) }
            if try link.definitions.create(key, definition.bytes) { return .created }
            if definition.kind != .subject { try link.jetStream.deleteStream(stream) }
            guard let bytes = try link.definitions.get(key),
                let existing = ClusterDefinition(bytes: bytes)
            else { return .failed("the subject was deleted meanwhile; try again") }
            return .exists(existing)
        } catch {
            return .failed("\(error)")
        }
    }

    private func created(_ name: String, _ definition: ClusterDefinition, outcome: CreateOutcome, change: UInt64) {
        // The entry made for it, unless something replaced it meanwhile.
        let entry = local[name].flatMap { $0.epoch == definition.epoch ? $0 : nil }
        let waiting = awaitingStreams.removeValue(forKey: definition.epoch) ?? []
        defer { for publish in waiting { publish() } }
        switch outcome {
        case .created:
            if let entry, entry.retainsValues { host.startConsuming(entry) }
            host.answer(change, error: nil)
        case .exists(let existing):
            guard existing.hasShape(of: definition) else {
                // Subscriptions a pub or sub made on the entry hear why it goes.
                if let entry { removeLocally(entry, saying: Self.definedElsewhere(name, as: existing)) }
                return host.answer(
                    change, error: ProtocolError(.kindMismatch, "subject '\(name)' exists as \(existing.shape)"))
            }
            if let entry {
                if entry.kind == .subject {
                    definitions[name] = existing
                } else {
                    removeLocally(entry)
                    adopt(name, existing)
                }
            }
            host.answer(change, error: nil)
        case .failed(let problem):
            if let entry { removeLocally(entry) }
            host.answer(change, error: ProtocolError(.unavailable, "the cluster did not take the subject: \(problem)"))
        }
    }

    /// Whether this node is making the retained subject of `epoch`, whose stream does not
    /// exist yet.
    func awaitsStream(of epoch: String) -> Bool { awaitingStreams[epoch] != nil }

    /// Runs `publish` once the stream of `epoch` exists: at once, unless this node is making
    /// its subject (made here a moment ago).
    func whenStreamExists(of epoch: String, _ publish: @escaping () -> Void) {
        guard awaitingStreams[epoch] != nil else { return publish() }
        awaitingStreams[epoch]!.append(publish)
    }

    /// Ends `entry` here (a retained subject once this node delivered what its stream holds)
    /// and in the cluster.
    func terminate(_ entry: SubjectEntry, error: ProtocolError?) {
        end(entry, error: error)
        guard var definition = definitions[entry.name] else { return }
        definition.ended = error.map { .error($0.message) } ?? .completed
        definitions[entry.name] = definition
        let key = ClusterDefinition.key(of: entry.name)
        let bytes = definition.bytes
        writeChange { link throws(NATSError) in try link.definitions.put(key, bytes) }
    }

    /// Deletes `entry` here at once and in the cluster (its definition, and a retained
    /// subject's stream).
    func delete(_ entry: SubjectEntry) {
        let key = ClusterDefinition.key(of: entry.name)
        let stream = entry.retainsValues ? link.streamName(epoch: entry.epoch) : nil
        removeLocally(entry)
        writeChange { link throws(NATSError) in
            try link.definitions.delete(key)
            if let stream { try link.jetStream.deleteStream(stream) }
        }
    }

    /// Runs `write` on the worker as a change whose answer replies wait for.
    private func writeChange(_ write: @escaping @Sendable (ClusterLink) throws(NATSError) -> Void) {
        let change = host.beginChange()
        let link = link
        link.worker.run { () -> String? in
            do throws(NATSError) {
                try write(link)
                return nil
            } catch {
                return "\(error)"
            }
        } then: { [self] failure in
            host.answer(
                change, error: failure.map { ProtocolError(.unavailable, "the cluster did not take it: \($0)") })
        }
    }

    // MARK: The bucket's changes

    /// Reads every definition in the bucket (blocks: at start, before the loop runs).
    func loadDefinitions() throws(NATSError) {
        for key in try link.definitions.keys() {
            guard let name = ClusterDefinition.name(ofKey: key[...]),
                let bytes = try link.definitions.get(key), let definition = ClusterDefinition(bytes: bytes)
            else { continue }
            if local[name] == nil { adopt(name, definition) }
        }
    }

    /// A key of the bucket changed (another node's change, or this node's own coming back).
    func definitionChanged(_ message: NATSStreamMessage) {
        guard let name = ClusterDefinition.name(ofKey: message.subject.dropFirst(link.definitionsPrefix.utf8.count))
        else { return }
        if message.operation == "DEL" || message.operation == "PURGE" {
            if let entry = local[name] { removeLocally(entry) }
            definitions.deleted(name)
            return
        }
        guard let definition = ClusterDefinition(bytes: message.payload) else { return }
        definitions.read(revision: message.streamSeq, of: name)
        if let entry = local[name] {
            // A plain subject's epoch is each node's own.
            guard entry.epoch != definition.epoch && !(entry.kind == .subject && definition.kind == .subject) else {
                definitions[name] = definition
                if let ended = definition.ended, entry.acceptsValues { end(entry, error: ended.error) }
                return
            }
            // Made anew elsewhere without a deletion first (its values before are gone), or made
            // here by a pub or sub before this node heard of the cluster's definition.
            let sameShape = definition.hasShape(of: entry)
            removeLocally(entry, saying: sameShape ? Self.renewed : Self.definedElsewhere(name, as: definition))
        }
        adopt(name, definition)
    }

    /// Makes the local entry `definition` defines (and, unless `consuming` is false, a retained
    /// subject's consumer).
    @discardableResult
    private func adopt(_ name: String, _ definition: ClusterDefinition, consuming: Bool = true) -> SubjectEntry {
        let entry = SubjectEntry(
            name: name, kind: definition.kind, capacity: definition.capacity,
            retainMilliseconds: definition.retainMilliseconds, initial: definition.initial,
            maxReplayBytes: local.retained.maxReplayBytes, maxKeys: definition.maxKeys, epoch: definition.epoch,
            durable: definition.durable)
        if entry.map?.ttlMilliseconds != nil { host.expireInCluster(entry) }
        local.adopt(entry)
        definitions[name] = definition
        if entry.retainsValues && consuming { host.startConsuming(entry) }
        if let ended = definition.ended { end(entry, error: ended.error) }
        adopted(name)
        return entry
    }

    /// Ends `entry` here: no value is accepted from now on; a plain subject's subscribers get the
    /// end at once, a retained subject's once this node has delivered every value its stream
    /// holds now (which may come after the definition's change).
    private func end(_ entry: SubjectEntry, error: ProtocolError?) {
        guard entry.retainsValues else { return local.terminate(entry, error: error) }
        entry.isEnding = true
        let epoch = entry.epoch
        let link = link
        link.worker.run {
            (try? link.jetStream.lastSequence(of: link.streamName(epoch: epoch))) ?? 0
        } then: { [self] last in
            host.endStream(of: epoch, after: last, error: error)
        }
    }

    /// Takes `entry` out here: its subscribers complete (or end with `error`), a retained
    /// subject's consumer stops.
    private func removeLocally(_ entry: SubjectEntry, saying error: ProtocolError? = nil) {
        definitions[entry.name] = nil
        if entry.retainsValues { host.stopConsuming(entry) }
        if let error {
            local.terminate(entry, error: error)
            local.forget(entry)
        } else {
            local.delete(entry)
        }
    }

    /// What the subscribers of a subject this node made get when the cluster's definition of
    /// it, made on another node a moment before, arrives in another shape.
    private static func definedElsewhere(_ name: String, as definition: ClusterDefinition) -> ProtocolError {
        ProtocolError(
            .subjectError,
            "subject '\(name)' is the cluster's \(definition.shape), made on another node: subscribe again")
    }

    /// What a retained subject's subscribers get when it goes on in a new epoch.
    private static let renewed = ProtocolError(
        .subjectError, "the cluster lost this subject's values and it goes on in a new epoch: subscribe again")

    /// After the link came back: when a retained subject kept in memory lost its stream (the
    /// NATS server restarted), the subject goes on in a new epoch with a new stream, its
    /// definition updated only if no other node did it first (the bucket's revision).
    func renewIfLost(_ entry: SubjectEntry) {
        guard var definition = definitions[entry.name], let revision = definitions.revision(of: entry.name) else {
            return
        }
        let name = entry.name
        let stream = link.streamName(epoch: entry.epoch)
        definition.epoch = Epoch.make()
        let renewed = definition
        let link = link
        link.worker.run {
            do throws(NATSError) {
                guard try link.jetStream.lastSequence(of: stream) == nil else { return }
                try link.addStream(for: renewed)
                if try !link.definitions.update(ClusterDefinition.key(of: name), renewed.bytes, last: revision) {
                    try link.jetStream.deleteStream(link.streamName(epoch: renewed.epoch))
                }
                link.logger.warning(
                    "cluster: subject \(name) lost its values with the NATS server; it goes on in a new epoch")
            } catch {
                link.logger.error("cluster: cannot make subject \(name) anew: \(error)")
            }
        }
    }
}

/// What a clustered node's definitions' sync asks of its store (`ClusterSubjectStore`): the
/// changes replies wait for, the retained subjects' consumers and the maps' expiries.
///
/// Thread rules: loop thread only. Lifetime rule: the store is one; its sync holds it unowned.
protocol ClusterDefinitionHost: AnyObject {
    /// Numbers a change whose answer replies wait for (`ClusterChanges.begin`).
    func beginChange() -> UInt64
    /// Change `number` was answered: the replies waiting for it go out.
    func answer(_ number: UInt64, error: ProtocolError?)
    /// Starts the node's consumer of `entry`'s stream.
    func startConsuming(_ entry: SubjectEntry)
    /// Stops it (the subject is gone here).
    func stopConsuming(_ entry: SubjectEntry)
    /// The retained subject of `epoch` ends here, with `error` (nil: completed), once the
    /// node's consumer has delivered its stream as far as `last`: at once if it has.
    func endStream(of epoch: String, after last: UInt64, error: ProtocolError?)
    /// Has the sweep's work on `entry`, a map under `ttl_s`, done by the cluster.
    func expireInCluster(_ entry: SubjectEntry)
}

extension ClusterDefinition.Ending {
    /// The error a subscriber gets: nil for a completion.
    var error: ProtocolError? {
        switch self {
        case .completed: return nil
        case .error(let message): return ProtocolError(.subjectError, message)
        }
    }
}
