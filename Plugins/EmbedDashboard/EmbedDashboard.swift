import Foundation
import PackagePlugin

/// Puts the dashboard's web files (web/dashboard/: index.html and the stylesheets and scripts it
/// references) in the binary: before the target is compiled, DashboardEmbedder writes them as
/// the Swift source of `DashboardPage.html` in the plugin's work directory, and that file is
/// compiled with the target. The JavaScript client the page imports (clients/js/runnel.js)
/// becomes `ClientModule.source` the same way. The files are the command's declared inputs, so editing one
/// rebuilds the page; a file added to the folder is picked up when the build is next planned.
/// Lifetime rule: stateless; SwiftPM runs it in a process of its own while planning a build.
@main
struct EmbedDashboard: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let folder = context.package.directoryURL.appending(path: "web/dashboard")
        let index = folder.appending(path: "index.html")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path(percentEncoded: false))
        let inlined = names.filter { $0.hasSuffix(".css") || $0.hasSuffix(".js") }.sorted()
            .map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "DashboardPage+Document.swift")
        let module = context.package.directoryURL.appending(path: "clients/js/runnel.js")
        let moduleOutput = context.pluginWorkDirectoryURL.appending(path: "ClientModule+Source.swift")
        return [
            .buildCommand(
                displayName: "Embedding the dashboard page (web/dashboard)",
                executable: try context.tool(named: "DashboardEmbedder").url,
                arguments: ([output, index] + inlined).map { $0.path(percentEncoded: false) },
                inputFiles: [index] + inlined,
                outputFiles: [output]
            ),
            .buildCommand(
                displayName: "Embedding the JavaScript client (clients/js/runnel.js)",
                executable: try context.tool(named: "DashboardEmbedder").url,
                arguments: ["--module"] + [moduleOutput, module].map { $0.path(percentEncoded: false) },
                inputFiles: [module],
                outputFiles: [moduleOutput]
            ),
        ]
    }
}
