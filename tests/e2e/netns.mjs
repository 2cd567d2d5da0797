// Hosts for multi-host e2e tests: network namespaces joined to this one by veth pairs,
// host h at 10.<net>.<h>.2 (this side 10.<net>.<h>.1), created here and always deleted
// (with every process still inside) when the test exits.
//
//   const hosts = createHosts("pgr123", 232, 4);   // null when ip netns is not permitted
//   startProcess("ip", ["netns", "exec", hosts[0].ns, pagellm, "serve", ..., "--host", hosts[0].ip]);
import { execFileSync } from "node:child_process";

export const ip = (...args) => execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] });

export function createHosts(tag, net, count) {
  const hosts = Array.from({ length: count }, (_, k) => {
    const i = k + 1;
    return { ns: `${tag}n${i}`, veth: `${tag}v${i}`, peer: `${tag}p${i}`, hostIp: `10.${net}.${i}.1`, ip: `10.${net}.${i}.2` };
  });
  const teardown = () => {
    for (const h of hosts) {
      try { ip("netns", "pids", h.ns).toString().split(/\s+/).filter(Boolean).forEach((p) => process.kill(Number(p), "SIGKILL")); } catch {}
      try { ip("link", "del", h.veth); } catch {}
      try { ip("netns", "del", h.ns); } catch {}
    }
  };
  process.on("exit", teardown);
  try {
    ip("netns", "add", hosts[0].ns);
  } catch (e) {
    console.log(`SKIP: ip netns is not permitted here (${String(e.stderr ?? e).trim()})`);
    return null;
  }
  for (const [k, h] of hosts.entries()) {
    if (k > 0) ip("netns", "add", h.ns);
    ip("link", "add", h.veth, "type", "veth", "peer", "name", h.peer);
    ip("link", "set", h.peer, "netns", h.ns);
    ip("addr", "add", `${h.hostIp}/24`, "dev", h.veth);
    ip("link", "set", h.veth, "up");
    ip("netns", "exec", h.ns, "ip", "addr", "add", `${h.ip}/24`, "dev", h.peer);
    ip("netns", "exec", h.ns, "ip", "link", "set", h.peer, "up");
    ip("netns", "exec", h.ns, "ip", "link", "set", "lo", "up");
  }
  return hosts;
}
