// node-opcua against the server's OPC UA endpoint, driven by
// app/opcua_node_test.go over stdin and stdout, one JSON object a line.
//
// Arguments: a JSON object {url, policy, mode, user, password, pki,
// cert, key, applicationUri}. The script connects, browses the whole
// ramanserve folder, reads the three values with their units, tries a
// write, subscribes at 100 ms to Analytes/EPA/Value, and prints
// {"ready": ...}; then it prints {"change": ...} for every data change
// until stdin says "quit". Any failure prints {"error": ...} and exits 1.
"use strict";
const readline = require("readline");
const {
  OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds,
  ClientSubscription, ClientMonitoredItem, TimestampsToReturn, UserTokenType, DataType,
  BrowseDirection, NodeClassMask,
} = require("node-opcua-client");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");

const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function browseAll(session, nodeId) {
  const out = [];
  const queue = [nodeId];
  while (queue.length > 0 && out.length < 1000) {
    const n = queue.shift();
    const r = await session.browse({ nodeId: n, browseDirection: BrowseDirection.Forward, referenceTypeId: "HierarchicalReferences", includeSubtypes: true, nodeClassMask: NodeClassMask.Object | NodeClassMask.Variable, resultMask: 63 });
    if (r.statusCode.value !== 0) throw new Error(`browse ${n}: ${r.statusCode.toString()}`);
    for (const ref of r.references) {
      out.push(ref.nodeId.toString());
      queue.push(ref.nodeId.toString());
    }
  }
  return out;
}

async function main() {
  const args = JSON.parse(process.argv[2]);
  const certificateManager = new OPCUACertificateManager({ rootFolder: args.pki, automaticallyAcceptUnknownCertificate: true });
  const client = OPCUAClient.create({
    applicationName: "ramanserve-interop",
    applicationUri: args.applicationUri,
    endpointMustExist: false,
    securityPolicy: SecurityPolicy[args.policy],
    securityMode: MessageSecurityMode[args.mode],
    certificateFile: args.cert,
    privateKeyFile: args.key,
    clientCertificateManager: certificateManager,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 60000,
  });
  try {
    await client.connect(args.url);
  } catch (e) {
    say({ refused: e.message });
    return;
  }
  let session;
  try {
    session = args.user
      ? await client.createSession({ type: UserTokenType.UserName, userName: args.user, password: args.password })
      : await client.createSession();
  } catch (e) {
    say({ refused: e.message });
    await client.disconnect();
    return;
  }
  const ns = (await session.readNamespaceArray()).indexOf("urn:ramanserve");
  if (ns < 0) throw new Error("namespace urn:ramanserve not in the server's namespace array");
  const id = (p) => `ns=${ns};s=${p}`;
  const nodes = await browseAll(session, id("ramanserve"));
  const values = {};
  for (const a of ["EPA", "DHA", "DPA"]) {
    const [v, eu] = await session.read([
      { nodeId: id(`ramanserve/Analytes/${a}/Value`), attributeId: AttributeIds.Value },
      { nodeId: id(`ramanserve/Analytes/${a}/Value/EngineeringUnits`), attributeId: AttributeIds.Value },
    ]);
    values[a] = { value: v.value.value, status: v.statusCode.name, units: eu.value.value && eu.value.value.displayName.text };
  }
  const written = await session.write({ nodeId: id("ramanserve/Analytes/EPA/Value"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 1.5 } } });

  const sub = ClientSubscription.create(session, { requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1 });
  const item = ClientMonitoredItem.create(sub, { nodeId: id("ramanserve/Analytes/EPA/Value"), attributeId: AttributeIds.Value }, { samplingInterval: 100, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
  // The first change is the value at the time of monitoring; ready is
  // said after it, so every later change is a predict's.
  await new Promise((resolve, reject) => {
    item.once("changed", () => {
      item.on("changed", (dv) => {
        say({ change: { value: dv.value.value, status: dv.statusCode.name, code: dv.statusCode.value, source: dv.sourceTimestamp ? dv.sourceTimestamp.toISOString() : null, server: dv.serverTimestamp ? dv.serverTimestamp.toISOString() : null } });
      });
      resolve();
    });
    item.once("err", reject);
  });
  say({ ready: { nodes, values, write: written.name, channel: client.securityPolicy, mode: MessageSecurityMode[client.securityMode] } });

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() === "quit") break;
  }
  await sub.terminate();
  await session.close();
  await client.disconnect();
  say({ done: true });
}

main().catch((e) => { say({ error: e.message }); process.exit(1); });
