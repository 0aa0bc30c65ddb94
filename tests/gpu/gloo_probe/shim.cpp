// tests/gpu/gloo_probe: creates a Gloo TCP device on 127.0.0.1, the first
// thing dtrain's Gloo group does (see run.sh).
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <cstdio>
extern "C" int probe_create() {
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  std::printf("device created: %s\n", device->str().c_str());
  return 0;
}
