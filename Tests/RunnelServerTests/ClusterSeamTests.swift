import Foundation
import Testing

/// The cluster is a layer the node's code calls through one seam (`SharedSubjects`,
/// `SubscriptionInterest`, `SharedFigures`, `OccupancyPeers`): no code in the node's folders
/// names a type of the cluster's (`Cluster…`, `NATS…`); comments may. Only `RunnelDaemon`, which
/// puts the node together, makes the cluster's parts.
@Suite struct ClusterSeamTests {
    static let nodeFolders = [
        "RunnelHTTP", "RunnelServer/Access", "RunnelServer/Metrics", "RunnelServer/Server", "RunnelServer/Stages",
        "RunnelServer/Subjects", "RunnelServer/Transports",
    ]

    static var sources: URL {
        // Tests/RunnelServerTests/<this file> -> package root.
        URL(fileURLWithPath: "\(#filePath)").deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    @Test func theNodesCodeNamesNoClusterType() throws {
        let clusterType = try Regex(#"\b(Cluster|NATS)[A-Z]\w*"#)
        var found: [String] = []
        var files = 0
        for folder in Self.nodeFolders {
            let directory = Self.sources.appendingPathComponent(folder)
            let enumerator = try #require(FileManager.default.enumerator(atPath: directory.path))
            for case let path as String in enumerator where path.hasSuffix(".swift") {
                files += 1
                let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    for match in code.matches(of: clusterType) {
                        found.append("\(folder)/\(path):\(number + 1): \(code[match.range])")
                    }
                }
            }
        }
        #expect(files > 50)
        #expect(found.isEmpty, "the node's code names the cluster's types: \(found)")
    }
}
