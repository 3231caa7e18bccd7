import Logging
import Runnel
import RunnelUV

/// One client's protocol state: its authentication, its subscriptions by sid, and the
/// writing of its replies and events, over whatever transport carries it.
///
/// The work is split by concern over files: requests in (`Session+Input`, with the
/// backpressure that holds them while replies pile up), the ops (`Session+Requests`), events
/// out (`Session+Delivery`; over the soft limit, `Session+SlowConsumer`). Every line goes out through
/// `transport` (or `cork`), encoded by `ServerLineWriter` or, for `next` events, from pieces
/// encoded once.
///
/// Loop thread only: transports call it from the loop, and every subject a session subscribes
/// to is sent to from the loop. A session ends when its transport closes (either side); it
/// then disposes every subscription it holds, at once, so their chains, timers and inner
/// subscriptions are released.
final class Session: RequestReceiver, @unchecked Sendable {
    let id: UInt64
    /// What the session uses of its server: its shared parts, the configuration and rights it
    /// was last handed, and the calls back (`SessionContext`). Replaced on reload
    /// (`contextDidChange`).
    private(set) var context: SessionContext
    /// This connection as a publisher: paused while a subscriber its values reached lags
    /// under `backpressure` (`Session+Input` holds its requests meanwhile).
    let publisher: PublisherGate
    /// While the unsent output is over the soft limit: the grace and the publishers waiting
    /// for it to fall (`Session+SlowConsumer`).
    var lag: Lag?
    /// What this connection's stage evaluations are charged to: its own budget of steps
    /// (`max_eval_steps_per_second`, `max_eval_steps_burst`) and the publish bound.
    let evaluationAccount: EvaluationAccount
    /// What carries the client. A `let`: the delivery path reads it without retaining it.
    let transport: any SessionTransport
    /// While a reply waits for the disk, what every line goes out through instead of
    /// `transport`: it holds them in order behind the reply.
    private(set) var cork: CorkedTransport?
    /// What the session may do: its token's grant, or the open grant of a server without
    /// tokens; nil until `auth` succeeds. Replaced on reload (`Session+Access`).
    var grant: TokenGrant? {
        didSet { evaluationAccount.token = context.owner.tokenEvaluationBudget(for: grant) }
    }
    var subscriptions: [String: SessionSubscription] = [:]
    private var nextSid: UInt64 = 1
    /// The subject of this connection's last `pub` (see `publishTarget`), which `grant` may
    /// publish to; cleared when the grant changes.
    var lastPublishTarget: SubjectEntry?
    /// Set once the session stops delivering: closed, or closing as a slow consumer.
    var isClosing = false
    /// Requests read while the unsent output was over the soft limit, or while publishing was
    /// paused, kept until both are over (`Session+Input`).
    var held = HeldInput()
    /// The address this session counts against in `max_connections_per_address`, when it
    /// was admitted as a connection of its own (not handed over by the HTTP front door).
    var countedHost: String?
    /// Until the client has sent a request and authenticated: the `login_timeout` the server's
    /// sweep closes it at (`Session+Login`); nil once it has, or when there is none.
    var loginWait: Duration?
    /// Bytes of sids and stage lists this session's subscriptions hold, against
    /// `max_subscription_bytes`.
    var subscriptionBytes = 0

    init(id: UInt64, context: SessionContext, transport: any SessionTransport) {
        self.id = id
        self.context = context
        self.publisher = PublisherGate(pauses: context.pauses)
        self.evaluationAccount = EvaluationAccount(
            connection: EvaluationBudget(
                stepsPerSecond: context.config.maxEvalStepsPerSecond, burstSteps: context.config.maxEvalStepsBurst,
                clock: context.scheduler),
            publish: context.publishBound, stats: context.stats)
        self.transport = transport
        self.grant = context.access.openGrant
    }

    /// The server's counters.
    var stats: ServerStats { context.stats }
    /// The server's subject store.
    var subjects: any SubjectStore { context.subjects }

    // MARK: Reload

    /// A reload made a new context: the connection's evaluation budget takes its limits, and
    /// when the tokens were rebuilt, the session moves to its token's new grant
    /// (`accessDidChange`).
    func contextDidChange(to new: SessionContext) {
        let old = context
        context = new
        evaluationAccount.connection.configure(
            stepsPerSecond: new.config.maxEvalStepsPerSecond, burstSteps: new.config.maxEvalStepsBurst)
        if new.access !== old.access { accessDidChange(to: new.access) }
    }

    // MARK: Subscriptions

    /// A sid not in use on this connection.
    func freshSid() -> String {
        while true {
            let sid = "s\(nextSid)"
            nextSid += 1
            if subscriptions[sid] == nil { return sid }
        }
    }

    /// Forgets `subscription` (finished, unsubscribed or closed) and fixes the counts.
    func forget(_ subscription: SessionSubscription) {
        guard !subscription.isFinished else { return }
        subscription.isFinished = true
        subscription.disposable?.dispose()
        if subscriptions[subscription.sid] === subscription { subscriptions[subscription.sid] = nil }
        subscription.entry?.namedSubscriptions -= 1
        subscriptionBytes -= subscription.pinnedBytes
        stats.subscriptions -= 1
    }

    /// Disposes every subscription: the connection is gone or going.
    func disposeAll() {
        let all = subscriptions.values
        for subscription in all { forget(subscription) }
        subscriptions.removeAll()
    }

    // MARK: Ending

    /// The server is stopping: every subscription goes, queued output drains within `timeout`.
    func close(flushingWithin timeout: Duration) {
        disposeAll()
        endLag()
        transport.closeAfterFlush(timeout: timeout)
    }

    /// Ends the session from the server's side: nothing more is delivered, every subscription
    /// goes, one last `closing` line says why, and the transport closes once that is written
    /// (or after `timeout`).
    func close(saying reason: ProtocolError, flushingWithin timeout: Duration) {
        isClosing = true
        disposeAll()
        endLag()
        write(ServerLineWriter.closing(reason))
        output.closeAfterFlush(timeout: timeout)
    }

    /// The client sent its last request: nothing more is delivered, every subscription goes now.
    func transportDidEndInput() {
        context.scheduler.assertOnLoopThread()
        isClosing = true
        disposeAll()
        endLag()
    }

    /// The transport closed, from either side.
    func transportDidClose() {
        context.scheduler.assertOnLoopThread()
        isClosing = true
        cancelLoginWait()
        disposeAll()
        endLag()
        publisher.close()
        context.owner.sessionDidClose(self)
    }

    // MARK: Replies

    func writeReply(error: any Error, ref: RawJSON?) {
        let failure = ProtocolError(wrapping: error)
        stats.countRequestError(failure.code)
        write(ServerLineWriter.failure(failure, ref: ref))
    }

    /// Writes `{"ok":true[,"ref":R]`, the members `fields` adds, and `}`.
    func writeOK(ref: RawJSON?, _ fields: (inout ServerLineWriter) -> Void = { _ in }) {
        var line = ServerLineWriter.reply(ok: true, ref: ref)
        fields(&line)
        write(line)
    }

    func write(_ line: consuming ServerLineWriter) {
        line.finish().withUnsafeBytes { bytes in
            stats.bytesOut &+= UInt64(bytes.count + 1)
            output.writeLine(bytes)
        }
    }

    /// Where lines go now: the transport, or the cork while there is one.
    var output: any SessionTransport { cork ?? transport }

    /// Writes `{"ok":true[,"ref":R]`, the members `fields` adds, and `}` once the durable
    /// changes made so far are on disk (at once unless replies wait for the disk), or the
    /// error that kept them off it. Every line after it waits behind it, so nothing overtakes
    /// the reply.
    func replyWhenWritten(ref: RawJSON?, _ fields: @escaping (inout ServerLineWriter) -> Void = { _ in }) {
        guard subjects.repliesWaitForDisk else {
            writeOK(ref: ref, fields)
            return
        }
        let cork = self.cork ?? CorkedTransport(wrapping: transport)
        self.cork = cork
        let slot = cork.reserve()
        subjects.whenWritten { [self] error in
            var line: ServerLineWriter
            if let error {
                line = ServerLineWriter.failure(error, ref: ref)
            } else {
                line = ServerLineWriter.reply(ok: true, ref: ref)
                fields(&line)
            }
            cork.fill(slot, with: line.finish())
            if cork.isDrained && self.cork === cork { self.cork = nil }
        }
    }
}

extension ProtocolError {
    /// `error` as the protocol reports it: a `ProtocolError` as is, the library's timeout as
    /// `eval`/"timeout", anything else as `eval` with its description.
    init(wrapping error: any Error) {
        switch error {
        case let failure as ProtocolError: self = failure
        case RunnelError.timedOut: self.init(.eval, "timeout")
        default: self.init(.eval, "\(error)")
        }
    }
}
