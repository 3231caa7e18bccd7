import RunnelCompression
import RunnelProtocol
import RunnelUV

extension Server {
    /// Every figure of the `stats` reply, and what a monitoring system also wants (connections
    /// per transport, refusals, slow-consumer disconnects, error replies by code, the loop's
    /// turn lengths as a histogram, the process's CPU, memory and descriptors), in the
    /// Prometheus text format for `GET /metrics`: every loop's counters added up
    /// (`ServerGroup.gatherFigures`), handed to `then` on this loop. Loop thread.
    package func gatherMetricsExposition(then: @escaping (String) -> Void) {
        scheduler.assertOnLoopThread()
        group.gatherFigures(askedBy: self) { [self] figures in then(metricsExposition(summing: figures)) }
    }

    private func metricsExposition(summing figures: LoopFigures) -> String {
        let counts = figures.counts
        let subjects = figures.subjects
        var metrics = PrometheusExposition()
        let byTransport = figures.connectionsByTransport
        let transports = Self.transportNames + byTransport.keys.filter { !Self.transportNames.contains($0) }.sorted()
        metrics.metric(
            "runnel_connections", .gauge, help: "Client connections open now, by transport.", label: "transport",
            transports.map { ($0, Double(byTransport[$0] ?? 0)) })
        metrics.metric(
            "runnel_connections_refused_total", .counter,
            help: "Connections refused at max_connections or max_connections_per_address.",
            Double(group.admission.refusedCount))
        metrics.metric(
            "runnel_login_timeouts_total", .counter,
            help: "Connections closed for not sending a request, or not authenticating, within login_timeout.",
            Double(counts.loginTimeouts))
        metrics.metric(
            "runnel_retained_bytes", .gauge, help: "Bytes of values kept by replay and behavior subjects.",
            Double(subjects?.retainedBytes ?? 0))
        metrics.metric(
            "runnel_compressed_streams", .gauge,
            help: "WebSockets with permessage-deflate and gzip'd event streams open now.", label: "transport",
            [("websocket", Double(figures.compressedWebSockets)), ("sse", Double(figures.compressedEventStreams))])
        metrics.metric(
            "runnel_compression_memory_bytes", .gauge,
            help: "Bytes zlib holds for compression and decompression, all connections together.",
            Double(ZlibMemory.bytes))
        metrics.metric(
            "runnel_tls_failures_total", .counter,
            help: "TLS connections that failed or did not finish their handshake.", Double(counts.tlsFailures))
        metrics.metric(
            "runnel_subscriptions", .gauge, help: "Subscriptions held by all connections now.",
            Double(counts.subscriptions))
        metrics.metric(
            "runnel_shared_stage_chains", .gauge,
            help: "Stage chains running once per value for several subscriptions now.", Double(counts.sharedChains))
        metrics.metric(
            "runnel_shared_stage_chain_subscriptions", .gauge,
            help: "Subscriptions served by a shared stage chain now.", Double(counts.sharedChainSubscriptions))
        metrics.metric("runnel_subjects", .gauge, help: "Subjects that exist now.", Double(subjects?.count ?? 0))
        metrics.metric(
            "runnel_timers", .gauge, help: "Timer handles armed now (the server's sweep and time-based stages).",
            Double(figures.timers))
        metrics.metric(
            "runnel_published_total", .counter, help: "Values published into subjects.", Double(counts.published))
        metrics.metric(
            "runnel_delivered_total", .counter, help: "next events written to subscriptions.",
            Double(counts.delivered))
        metrics.metric(
            "runnel_dropped_total", .counter,
            help: "next events dropped for slow consumers (slow_consumer = drop).", Double(counts.dropped))
        metrics.metric(
            "runnel_slow_consumer_disconnects_total", .counter,
            help: "Connections closed as slow consumers (slow_consumer = disconnect or backpressure).",
            Double(counts.slowConsumerDisconnects))
        metrics.metric(
            "runnel_publish_pauses_total", .counter,
            help: "Times a publisher was paused because a subscriber its value reached lagged "
                + "(slow_consumer = disconnect while it reads, or backpressure).",
            Double(figures.publishPauses))
        metrics.metric(
            "runnel_publishers_paused", .gauge, help: "Publishers paused now by lagging subscribers.",
            Double(figures.publishersPaused))
        metrics.metric(
            "runnel_publish_paused_seconds_total", .counter,
            help: "Seconds publishers have spent paused by lagging subscribers.",
            figures.publishPausedSeconds)
        metrics.metric(
            "runnel_stage_evaluations_refused_total", .counter,
            help: "Stage evaluations refused, each ending its subscription with eval/limit, by the bound that "
                + "refused it: the connection's max_eval_steps_per_second budget, its token's "
                + "token_eval_steps_per_second budget, or max_publish_eval_ms.",
            label: "bound",
            [
                ("connection", Double(counts.evaluationsRefusedByConnectionBudget)),
                ("token", Double(counts.evaluationsRefusedByTokenBudget)),
                ("publish", Double(counts.evaluationsRefusedByPublishBound)),
            ])
        metrics.metric(
            "runnel_received_bytes_total", .counter, help: "Protocol bytes received (request lines).",
            Double(counts.bytesIn))
        metrics.metric(
            "runnel_sent_bytes_total", .counter, help: "Protocol bytes sent (reply and event lines).",
            Double(counts.bytesOut))
        let errors = counts.requestErrors
        metrics.metric(
            "runnel_request_errors_total", .counter, help: "Requests answered with an error, by error code.",
            label: "code", ErrorCode.allCases.map { ($0.rawValue, Double(errors[$0] ?? 0)) })
        metrics.metric(
            "runnel_http_responses_total", .counter, help: "Answers of the HTTP front door, by status code.",
            label: "status", counts.httpResponses.sorted { $0.key < $1.key }.map { (String($0.key), Double($0.value)) })
        writeLoopMetrics(into: &metrics)
        if let journal = subjects?.journal {
            metrics.metric(
                "runnel_journal_queue_changes", .gauge, help: "Changes waiting for the durable journal's writer.",
                Double(journal.queued))
            metrics.metric(
                "runnel_journal_batches_total", .counter, help: "Batches the journal's writer committed.",
                Double(journal.batches))
            metrics.metric(
                "runnel_journal_last_commit_seconds", .gauge, help: "How long the journal's last commit took.",
                Double(journal.lastCommitMicroseconds) / 1e6)
            metrics.metric(
                "runnel_journal_size_bytes", .gauge, help: "Bytes of the durable journal on disk.",
                Double(journal.bytesOnDisk))
            metrics.metric(
                "runnel_journal_failing", .gauge, help: "1 while durable writes fail (a full disk, an I/O error).",
                journal.failing ? 1 : 0)
        }
        subjects?.cluster?.writeMetrics(into: &metrics)
        let process = ProcessStatistics.current()
        metrics.metric(
            "process_cpu_seconds_total", .counter, help: "User and system CPU time spent, in seconds.",
            process.cpuSeconds)
        if let resident = process.residentBytes {
            metrics.metric("process_resident_memory_bytes", .gauge, help: "Resident memory size.", Double(resident))
        }
        if let open = process.openDescriptors {
            metrics.metric("process_open_fds", .gauge, help: "Open file descriptors.", Double(open))
        }
        if let max = process.maxDescriptors {
            metrics.metric("process_max_fds", .gauge, help: "The limit on open file descriptors.", Double(max))
        }
        metrics.metric(
            "process_start_time_seconds", .gauge, help: "When the server started, in seconds since the Unix epoch.",
            startTimeUnixSeconds)
        metrics.metric(
            "runnel_uptime_seconds", .gauge, help: "Seconds since the server started.", Double(uptimeSeconds))
        return metrics.text
    }

    /// The transports `runnel_connections` always lists (so a dashboard's series exist at 0);
    /// any other one with open connections is listed after them.
    static let transportNames = ["tcp", "http", "sse", "websocket"]
}

extension Server {
    /// Each event loop's series, labelled `loop` (0: the first, where the protocol runs):
    /// its connections, the batches other loops handed it, its turn lengths.
    fileprivate func writeLoopMetrics(into metrics: inout PrometheusExposition) {
        let loops = (0..<(loopGroup?.count ?? 1)).map { index in
            (
                label: String(index), statistics: loopGroup?.statistics[index],
                turns: loopGroup?.turnLengths(ofLoop: index) ?? scheduler.turnLengths
            )
        }
        metrics.metric(
            "runnel_loop_connections", .gauge, help: "Client connections whose sockets each event loop serves.",
            label: "loop", loops.map { ($0.label, Double($0.statistics?.connections ?? connectionCount)) })
        metrics.metric(
            "runnel_loop_handoffs_total", .counter,
            help: "Batches of work other event loops handed each loop (one per loop turn at most).",
            label: "loop", loops.map { ($0.label, Double($0.statistics?.handoffs ?? 0)) })
        metrics.histogram(
            "runnel_loop_turn_duration_seconds",
            help: "How long each event loop iteration worked, from its wake-up to its next wait.",
            upperBounds: TurnLengths.boundsMicroseconds.map { Double($0) / 1e6 }, label: "loop",
            loops.map { ($0.label, $0.turns.counts, Double($0.turns.totalNanoseconds) / 1e9) })
        metrics.metric(
            "runnel_loop_turn_max_seconds", .gauge, help: "The longest iteration of each event loop since start.",
            label: "loop", loops.map { ($0.label, Double($0.turns.longestNanoseconds) / 1e9) })
    }
}
