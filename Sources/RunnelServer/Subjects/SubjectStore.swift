import Runnel
import RunnelJSON
import RunnelProtocol

/// The server's named subjects, and the one owner of every change to them: every creation,
/// publish, termination and deletion passes through a store, whether it comes from a request,
/// from the configuration's `[[subjects]]` or from a stage that names a subject. So a store
/// sees every change in order, which is what keeping subjects on disk needs; the rules about
/// when a change is allowed (auto-creation, limits, kinds) are the callers'.
///
/// `MemorySubjectStore` keeps them in memory; `DurableSubjectStore` also keeps durable
/// subjects in an SQLite journal. Thread rules: loop thread only.
package protocol SubjectStore: AnyObject {
    /// How many subjects there are.
    var count: Int { get }

    /// The subject `name`, if there is one.
    subscript(name: String) -> SubjectEntry? { get }

    /// Subjects whose name starts with `prefix`, sorted by name.
    func list(prefix: String) -> [SubjectEntry]

    /// The subjects it holds in memory, where the server keeps its own (`SystemSubjects`),
    /// which no store journals or shares: the store itself, or the memory it keeps in front of
    /// its journal or its cluster.
    var local: MemorySubjectStore { get }

    /// Whether it can keep durable subjects (the configuration names a `data_dir`).
    var keepsDurableSubjects: Bool { get }

    /// The cluster it shares its subjects with; nil standalone.
    var sharing: (any SharedSubjects)? { get }

    /// Whether replies about durable subjects wait for the disk (`fsync = always`), or a
    /// cluster's replies for the cluster, so that `whenWritten` may run its action later.
    var repliesWaitForDisk: Bool { get }

    /// Whether the reply to a change of `entry` (its creation, end or deletion) waits for
    /// `whenWritten`, and whether the reply to a value published to it does.
    func repliesWait(forChangeOf entry: SubjectEntry) -> Bool
    func repliesWait(forValueOf entry: SubjectEntry) -> Bool

    /// `storage` while changes to durable subjects cannot be written.
    func checkDurableWrites() throws(ProtocolError)

    /// Creates the subject `name`, which does not exist (durable only where the store keeps
    /// durable subjects; a replay subject keeps values for `retainMilliseconds` at most, when
    /// given); live pattern subscriptions that match join it at once.
    func create(
        _ name: String, kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64?, initial: RawJSON?, durable: Bool
    ) -> SubjectEntry

    /// Publishes `value` to `entry`, which accepts values; `members` is where the members of
    /// an object value sit, when the scan that read it noted them (its payload keeps them for
    /// expressions' member lookups). The delivery to its subscribers, now or once the value is
    /// on disk, runs inside a window of `bound`, which holds the stage evaluations it causes to
    /// `max_publish_eval_ms`.
    func publish(
        _ value: RawJSON, members: JSONMemberIndex, to entry: SubjectEntry, bounding bound: PublishEvaluationBound)

    /// Creates the map `name`, which does not exist: at most `maxKeys` keys, each removed once
    /// unwritten for `ttlMilliseconds` when given; durable only where the store keeps durable
    /// subjects.
    func createMap(_ name: String, ttlMilliseconds: Int64?, maxKeys: Int, durable: Bool) -> SubjectEntry

    /// Sets `key` of the map `entry`, which accepts values, to `value`, delivered to its
    /// subscribers inside a window of `bound`.
    func publish(
        _ value: RawJSON, members: JSONMemberIndex, key: String, to entry: SubjectEntry,
        bounding bound: PublishEvaluationBound)

    /// Removes `key` from the map `entry` (reason `deleted`); false when it is not live.
    func remove(_ key: String, from entry: SubjectEntry, bounding bound: PublishEvaluationBound) -> Bool

    /// Terminates `entry`: with `error`, or completed when it is nil.
    func terminate(_ entry: SubjectEntry, error: ProtocolError?)

    /// Completes `entry`'s subscriptions and frees its name.
    func delete(_ entry: SubjectEntry)

    /// Runs `action` once every change made so far is on disk, with the error when writing
    /// failed; at once where nothing waits for the disk.
    func whenWritten(_ action: @escaping (ProtocolError?) -> Void)

    /// Every value published to subjects matching `pattern`, present and future, of the
    /// subjects `admitting` accepts (all when nil), asked once per subject as it is met. It
    /// never completes on its own; disposing it leaves every matching subject.
    func patternSignal(_ pattern: SubjectPattern, admitting: (@Sendable (String) -> Bool)?) -> Signal<Message>

    /// The bytes of values the subjects keep, and their bounds.
    var retained: RetainedValues { get }
    /// The durable journal's figures, for `stats`; nil without one.
    var journalStatistics: JournalStatistics? { get }

    /// Writes what is not written yet and lets go of the disk (a clean stop). Blocks.
    func close()

    /// `unavailable` while what the store shares with others cannot be reached (a clustered
    /// node's link to NATS is down): creating, ending or deleting a subject, a retained
    /// subject's values, and resuming from a position are refused then. Nothing for a store
    /// that shares nothing.
    func checkShared() throws(ProtocolError)
}

/// A map lives in the memory a store keeps in front (`local`), unless the store keeps it
/// durable (`DurableSubjectStore+Maps`) or shares it (`ClusterSubjectStore+Maps`).
extension SubjectStore {
    package var sharing: (any SharedSubjects)? { nil }

    package func createMap(_ name: String, ttlMilliseconds: Int64?, maxKeys: Int, durable: Bool) -> SubjectEntry {
        precondition(!durable, "a store that keeps no durable subject made a durable map")
        return local.createMap(name, ttlMilliseconds: ttlMilliseconds, maxKeys: maxKeys, durable: false)
    }

    package func publish(
        _ value: RawJSON, members: JSONMemberIndex, key: String, to entry: SubjectEntry,
        bounding bound: PublishEvaluationBound
    ) {
        local.publish(value, members: members, key: key, to: entry, bounding: bound)
    }

    package func remove(_ key: String, from entry: SubjectEntry, bounding bound: PublishEvaluationBound) -> Bool {
        local.remove(key, from: entry, bounding: bound)
    }
}
