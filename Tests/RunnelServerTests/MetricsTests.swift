import Foundation
import Testing

@testable import RunnelServer

/// `/metrics`: the text format itself, and what the server reports in it.
@Suite struct MetricsTests {
    @Test func numbersLabelsAndHelpAreWrittenInTheTextFormat() {
        var metrics = PrometheusExposition()
        metrics.metric("a_total", .counter, help: "Counts \\ things\non two lines.", 3)
        metrics.metric("b", .gauge, help: "A gauge.", label: "code", [("x\"y\\z\n", 0.25), ("plain", 1e-5)])
        #expect(
            metrics.text == """
                # HELP a_total Counts \\\\ things\\non two lines.
                # TYPE a_total counter
                a_total 3
                # HELP b A gauge.
                # TYPE b gauge
                b{code="x\\"y\\\\z\\n"} 0.25
                b{code="plain"} 1e-05

                """)
        #expect(PrometheusExposition.format(.infinity) == "+Inf")
        #expect(PrometheusExposition.format(-2) == "-2")
        #expect(PrometheusExposition.format(1e20) == "1e+20")
    }

    @Test func aHistogramsBucketsAreCumulative() {
        var metrics = PrometheusExposition()
        metrics.histogram("h_seconds", help: "H.", upperBounds: [0.001, 0.5], counts: [2, 0, 3], sum: 7.5)
        #expect(
            metrics.text == """
                # HELP h_seconds H.
                # TYPE h_seconds histogram
                h_seconds_bucket{le="0.001"} 2
                h_seconds_bucket{le="0.5"} 2
                h_seconds_bucket{le="+Inf"} 5
                h_seconds_sum 7.5
                h_seconds_count 5

                """)
    }

    @Test func theServerReportsItsCountersAndErrorsByCode() throws {
        let harness = SessionHarness {
            $0.maxConnections = 3
            $0.maxPendingBytes = 100
            $0.slowConsumer = .disconnect
        }
        let subscriber = harness.connect()
        let publisher = harness.connect()
        subscriber.send(#"{"op":"sub","subject":"m","sid":"x"}"#)
        publisher.send(
            #"{"op":"pub","subject":"m","value":1}"#, #"{"op":"pub","subject":"m","value":2}"#, "{nope",
            #"{"op":"frobnicate"}"#, #"{"op":"unsub","sid":"none"}"#)
        var samples = try Self.samples(harness.metrics())
        #expect(samples["runnel_connections{transport=\"tcp\"}"] == 0)
        #expect(samples["runnel_connections{transport=\"memory\"}"] == 2)
        #expect(samples["runnel_subscriptions"] == 1)
        #expect(samples["runnel_subjects"] == 1)
        #expect(samples["runnel_published_total"] == 2)
        #expect(samples["runnel_delivered_total"] == 2)
        #expect(samples["runnel_request_errors_total{code=\"bad_json\"}"] == 1)
        #expect(samples["runnel_request_errors_total{code=\"unknown_op\"}"] == 1)
        #expect(samples["runnel_request_errors_total{code=\"unknown_sid\"}"] == 1)
        #expect(samples["runnel_request_errors_total{code=\"limit\"}"] == 0)
        #expect(samples["runnel_slow_consumer_disconnects_total"] == 0)
        #expect(samples["runnel_publish_pauses_total"] == 0)
        #expect(samples["runnel_publishers_paused"] == 0)
        #expect(samples["runnel_publish_paused_seconds_total"] == 0)
        #expect((samples["runnel_loop_turn_duration_seconds_count{loop=\"0\"}"] ?? -1) >= 0)
        #expect(samples["runnel_loop_connections{loop=\"0\"}"] != nil)
        #expect((samples["process_resident_memory_bytes"] ?? 0) > 1_000_000)
        #expect((samples["process_open_fds"] ?? 0) > 0)
        #expect(samples["runnel_journal_size_bytes"] == nil, "no data_dir, no journal")

        // A subscriber over max_pending_bytes is cut (its connection closes); with the
        // publisher and three more, the fourth connection is refused.
        subscriber.transport.unsent = 1_000
        publisher.send(#"{"op":"pub","subject":"m","value":3}"#)
        for _ in 0..<3 { _ = harness.connect() }
        samples = try Self.samples(harness.metrics())
        #expect(samples["runnel_slow_consumer_disconnects_total"] == 1)
        #expect(samples["runnel_connections_refused_total"] == 1)
        #expect(samples["runnel_connections{transport=\"memory\"}"] == 3)
    }

    /// What `promtool check metrics` (Prometheus's own linter, from Debian's `prometheus`)
    /// says of a full exposition: nothing.
    @Test func promtoolFindsNothingToComplainAbout() throws {
        let harness = SessionHarness()
        harness.connect().send(#"{"op":"pub","subject":"p","value":1}"#, "{")
        let text = harness.metrics()
        let promtool = Process()
        promtool.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        promtool.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        promtool.standardInput = input
        promtool.standardOutput = output
        promtool.standardError = output
        try promtool.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        promtool.waitUntilExit()
        #expect(promtool.terminationStatus == 0, "\(said)\n\(text)")
        #expect(said.isEmpty, "\(said)")
    }

    /// Every sample of an exposition by its name and labels, after checking that each family
    /// has its HELP and TYPE lines first.
    static func samples(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var described: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                described.insert(String(line.split(separator: " ")[2]))
                continue
            }
            let parts = line.split(separator: " ")
            try #require(parts.count == 2, "\(line)")
            let name = String(parts[0].prefix { $0 != "{" })
            let family = ["_bucket", "_sum", "_count"].reduce(name) { family, suffix in
                family.hasSuffix(suffix) && described.contains(String(family.dropLast(suffix.count)))
                    ? String(family.dropLast(suffix.count)) : family
            }
            #expect(described.contains(family), "\(name) has no HELP/TYPE")
            samples[String(parts[0])] = parts[1] == "+Inf" ? .infinity : Double(parts[1])
        }
        return samples
    }
}
