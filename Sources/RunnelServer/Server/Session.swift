import Logging
import Runnel
import RunnelJSON
import RunnelProtocol
import RunnelUV

/// One client's protocol state, over whatever transport carries it, made of small parts that
/// own their state: `SessionContext` and `SessionSettings` (what it uses of the server),
/// `SessionState` (open, closing, closed), `SubscriptionTable` (its subscriptions by sid),
/// `HeldInput` (requests held while replies pile up or publishing is paused), `SlowConsumerLag` (a stretch over the soft
/// limit), the login wait and the token's expiry (`SessionDeadlines`). The files that drive
/// them: requests in (`Session+Input`), the ops (`Session+Requests`), events out
/// (`Session+Delivery`; over the soft limit, `Session+SlowConsumer`), the login wait
/// (`Session+Login`), rights (`Session+Access`), a JWT's expiry (`Session+Expiry`). Every line goes out through `transport` (or `cork`), encoded by
/// `ServerLineWriter` or, for `next` events, from pieces encoded once; every reply goes out
/// as a value beside its line (`SessionReply`).
///
/// Thread rules: loop thread only; transports call it from the loop, and every subject a
/// session subscribes to is sent to from the loop. Lifetime rule: its transport holds it until
/// it has told it `transportDidClose()`, and each event sink holds it until its subscription
/// is disposed; once its transport closes it disposes every subscription it holds, at once, so
/// their chains, timers and inner subscriptions are released, and the server forgets it.
final class Session: RequestReceiver, @unchecked Sendable {
    let id: UInt64
    /// What the session uses of its server: its shared parts and the calls back. A `let`:
    /// the delivery and publish paths reach them without retaining anything.
    let context: SessionContext
    /// The parts of `context` the publish and delivery paths use, held directly: a part
    /// reached through two `let`s is retained and released around each call on those paths,
    /// one held directly is not.
    let stats: ServerStats
    let subjects: any SubjectStore
    let publishBound: PublishEvaluationBound
    /// `context.replicas`, unretained (the context holds it), for each `pub` on a loop that
    /// does not own the subjects: it is side-tabled (weakly referenced), so each reference
    /// count on it takes the slow path.
    let unretainedReplicas: Unmanaged<SubjectReplicas>?
    /// The configuration and rights the session was last handed; replaced on reload
    /// (`settingsDidChange`).
    private(set) var settings: SessionSettings
    /// This connection as a publisher: paused while a subscriber its values reached lags
    /// (`Session+SlowConsumer`; `Session+Input` holds its requests meanwhile).
    let publisher: PublisherGate
    /// While the unsent output is over the soft limit: the grace and the publishers waiting
    /// for it to fall (`Session+SlowConsumer`).
    private(set) var lag: SlowConsumerLag?
    /// The subscriptions with a value waiting under conflation, in the order they began to
    /// wait: flushed in that order once the output falls (`Session+Conflation`).
    var waitingToFlush: [SessionSubscription] = []
    /// What this connection's stage evaluations are charged to: its own budget of steps
    /// (`max_eval_steps_per_second`, `max_eval_steps_burst`) and the publish bound.
    let evaluationAccount: EvaluationAccount
    /// What carries the client. A `let`: the delivery path reads it without retaining it.
    let transport: any SessionTransport
    /// While a reply waits for the disk, what every line goes out through instead of
    /// `transport`: it holds them in order behind the reply.
    private(set) var cork: CorkedTransport?
    /// Set when the client's input ended while `cork` held replies: the transport closes once
    /// they are written.
    private var closesWhenReplied = false
    /// What the session may do: its token's grant, or the open grant of a server without
    /// tokens; nil until `auth` succeeds. Replaced on reload (`Session+Access`); a JWT's is
    /// watched for its expiry (`Session+Expiry`).
    var grant: TokenGrant? {
        didSet {
            evaluationAccount.token = context.owner.tokenEvaluationBudget(for: grant)
            if grant?.jwt?.closesAt != oldValue?.jwt?.closesAt { watchTokenExpiry() }
        }
    }
    /// The subscriptions by sid, and what they hold together.
    let subscriptions: SubscriptionTable
    /// The subject of this connection's last `pub` (see `publishTarget`), which `grant` may
    /// publish to; cleared when the grant changes.
    var lastPublishTarget: SubjectEntry?
    /// On a loop that does not own the subjects: this session's last `pub`s sent to the owner,
    /// which the next quiet `pub` to the same subject may join (`publishThroughOwner`); its
    /// place is always in `cork`, and it goes with the cork.
    var publishRun: ForwardedPublishRun?
    /// Requests sent to the subjects' owner on another loop and not answered yet (runs of
    /// `pub`s among them): while there are any, requests are held past the crossing limit
    /// (`inputLimit`).
    var awaitingOwner = 0
    /// While a `sub` runs on a loop that does not own the subjects: set when a stage named one
    /// whose replica is not here, and the owner's refusals of those it asked for, for the
    /// `sub`'s next run (`Session+Replicas`).
    var stageReplicaMissing = false
    var replicaRefusals: [String: ProtocolError] = [:]
    /// Open, closing or closed; changed only here.
    private(set) var state = SessionState.open
    /// Requests read while the unsent output was over the soft limit, or while publishing was
    /// paused, kept until both are over (`Session+Input`).
    var held = HeldInput()
    /// The address this session counts against in `max_connections_per_address`, when it
    /// was admitted as a connection of its own (not handed over by the HTTP front door).
    var countedHost: String?
    /// Until the client has sent a request and authenticated: the `login_timeout` the server's
    /// sweep closes it at (`Session+Login`); nil once it has, or when there is none.
    var loginWait: Duration?

    init(id: UInt64, context: SessionContext, settings: SessionSettings, transport: any SessionTransport) {
        self.id = id
        self.context = context
        self.stats = context.stats
        self.subjects = context.subjects
        self.publishBound = context.publishBound
        self.unretainedReplicas = context.replicas.map { Unmanaged.passUnretained($0) }
        self.settings = settings
        self.subscriptions = SubscriptionTable(
            stats: context.stats, interest: context.shared?.readers ?? context.replicas?.interest,
            occupancy: context.occupancy,
            replicas: context.replicas)
        self.publisher = PublisherGate(pauses: context.pauses)
        self.evaluationAccount = EvaluationAccount(
            connection: EvaluationBudget(
                stepsPerSecond: settings.config.maxEvalStepsPerSecond, burstSteps: settings.config.maxEvalStepsBurst,
                clock: context.scheduler),
            publish: context.publishBound, stats: context.stats)
        self.transport = transport
        self.grant = settings.access.openGrant
    }

    // MARK: Reload

    /// A reload made new settings: the connection's evaluation budget takes their limits, and
    /// when the tokens were rebuilt, the session moves to its token's new grant
    /// (`accessDidChange`).
    func settingsDidChange(to new: SessionSettings) {
        let old = settings
        settings = new
        evaluationAccount.connection.configure(
            stepsPerSecond: new.config.maxEvalStepsPerSecond, burstSteps: new.config.maxEvalStepsBurst)
        if new.access !== old.access { accessDidChange(to: new.access) }
    }

    // MARK: Subscriptions

    /// Forgets `subscription` (finished, unsubscribed or closed) and fixes the counts.
    func forget(_ subscription: SessionSubscription) {
        subscription.waiting = WaitingValues()
        subscriptions.forget(subscription)
    }

    // MARK: Ending

    /// Set once the session stops delivering: closing (by either side) or closed.
    @inline(__always)
    var isClosing: Bool { state != .open }

    /// Starts (or continues) the slow-consumer lag: the only writer of `lag` besides `endLag`.
    func beginLag(_ new: SlowConsumerLag) {
        assert(lag == nil, "a lag begun during a lag")
        lag = new
    }

    /// The lag is over (the output fell, or the connection is closing): the grace stops and
    /// every publisher paused on it is let go.
    func endLag() {
        guard let ending = lag else { return }
        lag = nil
        ending.end()
    }

    /// The server is stopping: every subscription goes, queued output drains within `timeout`.
    func close(flushingWithin timeout: Duration) {
        subscriptions.disposeAll()
        endLag()
        transport.closeAfterFlush(timeout: timeout)
    }

    /// Ends the session from the server's side: nothing more is delivered, every subscription
    /// goes, one last `closing` line says why, and the transport closes once that is written
    /// (or after `timeout`).
    func close(saying reason: ProtocolError, flushingWithin timeout: Duration) {
        state.advance(to: .closing)
        subscriptions.disposeAll()
        endLag()
        write(.closing(reason))
        output.closeAfterFlush(timeout: timeout)
    }

    /// The client sent its last request: nothing more is delivered, every subscription goes now.
    func transportDidEndInput() {
        context.scheduler.assertOnLoopThread()
        state.advance(to: .closing)
        subscriptions.disposeAll()
        endLag()
        // Replies held behind one that waits still go out (`replyWhenWritten`).
        if cork != nil {
            closesWhenReplied = true
            transport.keepOpenPastEndOfInput()
        }
    }

    /// The transport closed, from either side.
    func transportDidClose() {
        context.scheduler.assertOnLoopThread()
        state.advance(to: .closed)
        cancelLoginWait()
        subscriptions.disposeAll()
        endLag()
        publisher.close()
        context.owner.sessionDidClose(self)
    }

    // MARK: Replies

    func writeReply(error: any Error, ref: RawJSON?) {
        let failure = ProtocolError(wrapping: error)
        stats.countRequestError(failure.code)
        write(SessionReply(ref: ref, .failed(failure)))
    }

    /// Writes `reply`.
    func write(_ reply: SessionReply) { write(.reply(reply)) }

    /// Writes `output` and counts what the transport wrote.
    func write(_ output: SessionOutput) {
        stats.counts.bytesOut &+= UInt64(self.output.write(output))
    }

    /// Where lines go now: the transport, or the cork while there is one.
    var output: any SessionTransport { cork ?? transport }

    /// Writes the reply `outcome` makes, once the durable changes made so far are on disk (at
    /// once unless replies wait for the disk), or the error that kept them off it. Every line
    /// after it waits behind it, so nothing overtakes the reply.
    func replyWhenWritten(ref: RawJSON?, _ outcome: @escaping () -> SessionReply.Outcome = { .done }) {
        guard subjects.repliesWaitForDisk else {
            write(SessionReply(ref: ref, outcome()))
            return
        }
        let place = reserveReply()
        subjects.whenWritten { [self] error in
            if let error { stats.countRequestError(error.code) }
            fill(place, with: SessionReply(ref: ref, error.map { .failed($0) } ?? outcome()))
        }
    }

    /// Writes the reply whose outcome `ask` hands its argument, on the loop: at once when it
    /// does so before returning, else in the reply's place, every line after it held behind it.
    /// `holdingInput`: the requests after it are held too until it is in, as on one loop, where
    /// the next request is read once the reply is made (for `list` and `stats`, a few bytes
    /// each and a reply of any size: a client that pipelines them has one asked at a time, and
    /// its replies count against its unsent output before more are read).
    func replyWhenAnswered(
        ref: RawJSON?, holdingInput: Bool = false, _ ask: (@escaping (SessionReply.Outcome) -> Void) -> Void
    ) {
        let answer = PendingAnswer()
        ask { [self] outcome in
            guard let place = answer.place else { return answer.outcome = outcome }
            fill(place, with: SessionReply(ref: ref, outcome))
            if holdingInput { resumeAfterAnswer() }
        }
        if let outcome = answer.outcome {
            write(SessionReply(ref: ref, outcome))
        } else {
            answer.place = reserveReply()
            if holdingInput { holdInputWhileWaiting() }
        }
    }

    /// The place of a reply written later: every line written after it waits behind it (in
    /// `cork`) until it is filled; meanwhile it weighs `bytes` as unsent output.
    func reserveReply(weighing bytes: Int = 0) -> ReplyPlace {
        let cork = self.cork ?? CorkedTransport(wrapping: transport)
        self.cork = cork
        return ReplyPlace(cork: cork, slot: cork.reserve(weighing: bytes))
    }

    /// Fills a reply's place (with nothing when `reply` is nil), writing what waited behind it
    /// up to the next unfilled one; the cork goes once nothing waits, and then a wait for the
    /// output to drain goes on with the transport.
    /// `afterEventsBehindIt`: the events held right behind the place go before it
    /// (`CorkedTransport`), for a request whose own events come with its answer.
    func fill(_ place: ReplyPlace, with reply: SessionReply?, afterEventsBehindIt: Bool = false) {
        fill(place, with: reply.map { [$0] } ?? [], afterEventsBehindIt: afterEventsBehindIt)
    }

    /// Fills a place several requests share (a run of `pub`s) with their replies, in order.
    func fill(_ place: ReplyPlace, with replies: [SessionReply], afterEventsBehindIt: Bool = false) {
        stats.counts.bytesOut &+= UInt64(
            place.cork.fill(place.slot, with: replies, afterEventsBehindIt: afterEventsBehindIt))
        if place.cork.isDrained && cork === place.cork {
            cork = nil
            publishRun = nil  // its place is filled: nothing joins it now
            if closesWhenReplied { transport.closeAfterEndOfInput() }
        }
        place.cork.handOverWaiter()
    }
}

/// Where a reply written later goes: its slot in the cork that holds the lines after it.
/// Thread rules: the session's loop.
struct ReplyPlace {
    let cork: CorkedTransport
    let slot: Int
}

/// A reply `replyWhenAnswered` waits for: its outcome when it came before its place was
/// reserved, else its place. Thread rules: the session's loop.
private final class PendingAnswer {
    var outcome: SessionReply.Outcome?
    var place: ReplyPlace?
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
