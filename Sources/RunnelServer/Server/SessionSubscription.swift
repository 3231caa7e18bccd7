import Runnel
import RunnelBytes
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// One subscription a client holds, by its `sid`. Loop thread only.
///
/// The fixed start of its `next` event line is encoded once, at `sub` time, so delivering a
/// value writes that shared prefix, the value's own bytes, and the closing `}`: nothing is
/// encoded per value.
package final class SessionSubscription: InterestedSubscription, @unchecked Sendable {
    let sid: String
    /// The named subject, for its subscription count; nil for a pattern subscription.
    let entry: SubjectEntry?
    /// `{"ev":"next","sid":"S","value":` or, for a pattern, `{"ev":"next","sid":"S","subject":`
    /// (the subject's name and `valueKey` follow).
    let nextPrefix: ByteBuffer
    let isPattern: Bool
    /// It names a map: its `next` lines carry the key, and its removals and `synced` are
    /// events of their own (`Session+MapDelivery`).
    let isMap: Bool
    /// What `sub` named: the subject, or the pattern. For rechecking the token's rights on reload.
    package let pattern: SubjectPattern
    /// The subjects its stages have reached (named at `sub` time or at run time, as
    /// `flattenMap` does), each once: what a reload rechecks besides `pattern`. Grows only
    /// when a stage reaches a subject not reached before, never per delivered value.
    var reached: Set<String> = []
    /// Those of `reached` that are plain subjects: in a cluster, other nodes' values of them
    /// come over core NATS (`ClusterInterest.beganReading`).
    var reachedPlain: Set<String> = []
    /// Whether its `next` events carry `pos` (`"positions": true`, or `from`).
    let sendsPositions: Bool
    /// Whether its `next` events carry `ts` (`"ts": true`, version 1.3).
    let sendsTimes: Bool
    /// Whether its `next` lines end in more than `}` (`pos` or `ts`), or are a map's (one test
    /// on delivery keeps both off the plain lines' path).
    let writesTail: Bool
    /// `"S"`, the sid as a JSON string.
    let sidJSON: ByteBuffer
    var disposable: Disposable?
    /// Events not delivered since the last one that was: under the `drop` policy, or missed
    /// from other nodes of a cluster; `unknownDropped` when how many is not known.
    var dropped: UInt64 = 0
    var isFinished = false
    /// What the subscription counts against `max_subscription_bytes` (see `pinnedBytes(sid:stages:)`).
    var pinnedBytes = 0
    /// `sub` asked for `"conflate": true`: over the soft limit only its latest value waits
    /// (`Session+Conflation`); values of a subject whose policy is `conflate` wait so too.
    let conflates: Bool
    /// The values waiting, under conflation, for the output to fall below the soft limit (one,
    /// or one per key of a map). Values are written in order: while one waits, newer ones wait
    /// too.
    var waiting = WaitingValues()
    /// In its session's list of subscriptions to flush (`Session.waitingToFlush`), once
    /// however often it waits.
    var isQueuedToFlush = false

    /// The bytes a subscription holds for as long as it lives, bounded per connection by
    /// `max_subscription_bytes`: its sid three times (as given, as JSON, in the prefix of its
    /// event lines) and its stage list's JSON text, an upper bound on its expressions' and
    /// literals' size in memory up to a small factor.
    static func pinnedBytes(sid: String, stagesByteCount: Int) -> Int { 3 * sid.utf8.count + stagesByteCount }

    package var readsPlainValues: Bool { isPattern || entry?.kind == .subject }

    /// Whether it reads the values of the subject `name`: named by it, matched by its pattern
    /// (the server's subjects only by a pattern of theirs), or reached by its stages.
    func reads(_ name: String) -> Bool { SystemSubjects.reaches(pattern, name) || reached.contains(name) }

    /// `dropped` when some events were missed but not how many: its `dropped` event has no count.
    static let unknownDropped = UInt64.max

    /// Counts `count` more events missed (nil: how many is not known).
    package func noteDropped(_ count: UInt64?) {
        guard let count, dropped != Self.unknownDropped else {
            dropped = Self.unknownDropped
            return
        }
        let (sum, overflow) = dropped.addingReportingOverflow(count)
        dropped = overflow ? Self.unknownDropped - 1 : min(sum, Self.unknownDropped - 1)
    }

    /// What comes between a pattern line's subject and its value.
    static let valueKey: StaticString = ",\"value\":"

    init(
        sid: String, entry: SubjectEntry?, pattern: SubjectPattern, isMap: Bool = false, sendsPositions: Bool = false,
        sendsTimes: Bool = false, conflates: Bool = false
    ) {
        self.isMap = isMap
        self.sid = sid
        self.conflates = conflates
        self.entry = entry
        self.pattern = pattern
        self.isPattern = pattern.isWildcard
        self.sendsPositions = sendsPositions
        self.sendsTimes = sendsTimes
        writesTail = sendsPositions || sendsTimes || isMap
        var json = JSONWriter(reservingCapacity: sid.utf8.count + 2)
        json.writeString(sid)
        sidJSON = json.makeBuffer()
        var prefix = JSONWriter(reservingCapacity: 40 + sid.utf8.count)
        prefix.append("{\"ev\":\"next\",\"sid\":")
        prefix.append(raw: sidJSON)
        if isPattern {
            prefix.append(",\"subject\":")
        } else {
            prefix.append(Self.valueKey)
        }
        nextPrefix = prefix.makeBuffer()
    }

    /// Whether a `next` event of this subscription carries `message`'s position (when it has
    /// one): on a pattern, the position in the message's own subject; on a subject, only a
    /// position in that subject (values of other subjects, and values made from none, carry
    /// none).
    @inline(__always)
    func sendsPosition(of message: Message) -> Bool {
        sendsPositions && (isPattern || message.label === entry?.label || message.label.subjectLabel === entry?.label)
    }
}
