#include "shape_surfaces.h"

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "dtrain/util/errors.h"
#include "portable_math.h"

namespace dtrain::datasets {

namespace {

using portable::kPi;
using portable::Random;
using portable::sin_cos;

Vec3 operator+(const Vec3& a, const Vec3& b) {
  return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}
Vec3 operator-(const Vec3& a, const Vec3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
Vec3 operator*(double s, const Vec3& a) {
  return {s * a[0], s * a[1], s * a[2]};
}
double dot(const Vec3& a, const Vec3& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double norm(const Vec3& a) {
  return std::sqrt(dot(a, a));
}

// Index i with probability weights[i] / sum(weights).
std::size_t pick(Random& random, std::initializer_list<double> weights) {
  double total = 0.0;
  for (double w : weights) {
    total += w;
  }
  double u = random.uniform() * total;
  std::size_t i = 0;
  for (double w : weights) {
    if (u < w) {
      return i;
    }
    u -= w;
    ++i;
  }
  return weights.size() - 1;  // u landed on the rounding error past the last weight
}

// A convex polyhedron around the origin as triangles, with outward normals
// and cumulative areas for area-weighted choice.
class Polyhedron {
 public:
  struct Triangle {
    Vec3 a, b, c;
    int part = 0;
  };

  explicit Polyhedron(const std::vector<Triangle>& triangles) : triangles_(triangles) {
    double total = 0.0;
    for (const Triangle& t : triangles_) {
      Vec3 n = cross(t.b - t.a, t.c - t.a);
      const double length = norm(n);
      total += 0.5 * length;
      n = (1.0 / length) * n;
      // The origin is inside, so the outward side is the one facing away from it.
      normals_.push_back(dot(n, t.a) < 0.0 ? -1.0 * n : n);
      cumulative_area_.push_back(total);
    }
  }

  SurfacePoint sample(Random& random) const {
    const double u = random.uniform() * cumulative_area_.back();
    std::size_t i = 0;
    while (i + 1 < cumulative_area_.size() && u >= cumulative_area_[i]) {
      ++i;
    }
    const Triangle& t = triangles_[i];
    // Uniform on the parallelogram, folded back onto the triangle.
    double s = random.uniform();
    double r = random.uniform();
    if (s + r > 1.0) {
      s = 1.0 - s;
      r = 1.0 - r;
    }
    return {t.a + s * (t.b - t.a) + r * (t.c - t.a), normals_[i], t.part};
  }

 private:
  std::vector<Triangle> triangles_;
  std::vector<Vec3> normals_;
  std::vector<double> cumulative_area_;
};

// The quadrilateral a b c d (in order around it) as two triangles of `part`.
void add_quad(std::vector<Polyhedron::Triangle>& out, Vec3 a, Vec3 b, Vec3 c, Vec3 d, int part) {
  out.push_back({a, b, c, part});
  out.push_back({a, c, d, part});
}

// The part of a solid split at y = 0: 0 above, 1 below.
int upper_or_lower(double y) {
  return y >= 0.0 ? 0 : 1;
}

const Polyhedron& cube() {
  static const Polyhedron shape = [] {
    std::vector<Polyhedron::Triangle> t;
    for (int axis = 0; axis < 3; ++axis) {
      for (double side : {-1.0, 1.0}) {
        // The face at coordinate `axis` = side, spanned by the other two axes.
        const int u = (axis + 1) % 3;
        const int v = (axis + 2) % 3;
        auto corner = [&](double cu, double cv) {
          Vec3 p{};
          p[axis] = side;
          p[u] = cu;
          p[v] = cv;
          return p;
        };
        // Parts: top, bottom, sides.
        const int part = axis == 1 ? upper_or_lower(side) : 2;
        add_quad(t, corner(-1, -1), corner(1, -1), corner(1, 1), corner(-1, 1), part);
      }
    }
    return Polyhedron(t);
  }();
  return shape;
}

const Polyhedron& square_pyramid() {
  static const Polyhedron shape = [] {
    const Vec3 apex{0, 1, 0};
    const Vec3 base[4] = {{-1, -1, -1}, {1, -1, -1}, {1, -1, 1}, {-1, -1, 1}};
    std::vector<Polyhedron::Triangle> t;
    for (int i = 0; i < 4; ++i) {
      t.push_back({apex, base[i], base[(i + 1) % 4], /*part=sides*/ 0});
    }
    add_quad(t, base[0], base[1], base[2], base[3], /*part=base*/ 1);
    return Polyhedron(t);
  }();
  return shape;
}

const Polyhedron& octahedron() {
  static const Polyhedron shape = [] {
    std::vector<Polyhedron::Triangle> t;
    for (double x : {-1.0, 1.0}) {
      for (double y : {-1.0, 1.0}) {
        for (double z : {-1.0, 1.0}) {
          t.push_back({{x, 0, 0}, {0, y, 0}, {0, 0, z}, upper_or_lower(y)});
        }
      }
    }
    return Polyhedron(t);
  }();
  return shape;
}

const Polyhedron& tetrahedron() {
  static const Polyhedron shape = [] {
    // Alternate corners of a cube: a regular tetrahedron inscribed in the unit sphere.
    const double s = 1.0 / std::sqrt(3.0);
    const Vec3 v[4] = {{s, s, s}, {s, -s, -s}, {-s, s, -s}, {-s, -s, s}};
    // A face faces the opposite way to the corner it leaves out: up (part 0)
    // without v[1] or v[3], which lie below, down (part 1) without v[0] or v[2].
    return Polyhedron({{v[0], v[1], v[2], 0},
                       {v[0], v[1], v[3], 1},
                       {v[0], v[2], v[3], 0},
                       {v[1], v[2], v[3], 1}});
  }();
  return shape;
}

const Polyhedron& hexagonal_prism() {
  static const Polyhedron shape = [] {
    constexpr double kHalfHeight = 0.5;
    Vec3 top[6];
    Vec3 bottom[6];
    for (int i = 0; i < 6; ++i) {
      const auto angle = sin_cos(i * kPi / 3.0);
      top[i] = {angle.cos, kHalfHeight, angle.sin};
      bottom[i] = {angle.cos, -kHalfHeight, angle.sin};
    }
    std::vector<Polyhedron::Triangle> t;
    for (int i = 0; i < 6; ++i) {
      const int j = (i + 1) % 6;
      add_quad(t, bottom[i], bottom[j], top[j], top[i], /*part=sides*/ 0);
      t.push_back({{0, kHalfHeight, 0}, top[i], top[j], /*part=top*/ 1});
      t.push_back({{0, -kHalfHeight, 0}, bottom[i], bottom[j], /*part=bottom*/ 2});
    }
    return Polyhedron(t);
  }();
  return shape;
}

// The part of the sphere (center, radius) with unit-sphere height y in
// [y_low, y_high]: by Archimedes' hat-box theorem, uniform by area means y
// uniform.
SurfacePoint on_sphere(Random& random, const Vec3& center, double radius, double y_low = -1.0,
                       double y_high = 1.0) {
  const double y = random.uniform(y_low, y_high);
  const double ring = std::sqrt(1.0 - y * y);
  const auto angle = sin_cos(2.0 * kPi * random.uniform());
  const Vec3 normal{ring * angle.cos, y, ring * angle.sin};
  return {center + radius * normal, normal};
}

// The side of the cylinder of `radius` about the y axis between y_low and y_high.
SurfacePoint on_tube(Random& random, double radius, double y_low, double y_high) {
  const double y = random.uniform(y_low, y_high);
  const auto angle = sin_cos(2.0 * kPi * random.uniform());
  return {{radius * angle.cos, y, radius * angle.sin}, {angle.cos, 0.0, angle.sin}};
}

// The disk of `radius` at height y facing up (+1) or down (-1).
SurfacePoint on_disk(Random& random, double radius, double y, double facing) {
  const double r = radius * std::sqrt(random.uniform());  // area grows with r^2
  const auto angle = sin_cos(2.0 * kPi * random.uniform());
  return {{r * angle.cos, y, r * angle.sin}, {0.0, facing, 0.0}};
}

// The point `s` labelled as lying on `part`.
SurfacePoint on_part(SurfacePoint s, int part) {
  s.part = part;
  return s;
}

// A closed cylinder about the y axis (also the flat disk, a short one).
// Parts: side, top, bottom.
SurfacePoint on_cylinder(Random& random, double radius, double half_height) {
  const double side = 2.0 * kPi * radius * 2.0 * half_height;
  const double cap = kPi * radius * radius;
  switch (pick(random, {side, cap, cap})) {
    case 0:
      return on_part(on_tube(random, radius, -half_height, half_height), 0);
    case 1:
      return on_part(on_disk(random, radius, half_height, 1.0), 1);
    default:
      return on_part(on_disk(random, radius, -half_height, -1.0), 2);
  }
}

SurfacePoint cone(Random& random) {
  constexpr double kRadius = 1.0;
  constexpr double kApex = 1.0;
  constexpr double kBase = -1.0;
  constexpr double kHeight = kApex - kBase;
  const double slant = std::sqrt(kRadius * kRadius + kHeight * kHeight);
  // Parts: side, base.
  if (pick(random, {kPi * kRadius * slant, kPi * kRadius * kRadius}) == 1) {
    return on_part(on_disk(random, kRadius, kBase, -1.0), 1);
  }
  // The circle at fraction t of the way down has circumference proportional to t.
  const double t = std::sqrt(random.uniform());
  const auto angle = sin_cos(2.0 * kPi * random.uniform());
  const double r = kRadius * t;
  return {{r * angle.cos, kApex - kHeight * t, r * angle.sin},
          {kHeight / slant * angle.cos, kRadius / slant, kHeight / slant * angle.sin},
          0};
}

SurfacePoint torus(Random& random) {
  constexpr double kRing = 0.7;  // centre of the tube to the axis
  constexpr double kTube = 0.3;
  // The area element is proportional to the distance from the axis,
  // kRing + kTube cos(theta): rejection keeps theta in proportion.
  double theta_cos = 0.0;
  double theta_sin = 0.0;
  for (;;) {
    const auto theta = sin_cos(2.0 * kPi * random.uniform());
    if (random.uniform() * (kRing + kTube) < kRing + kTube * theta.cos) {
      theta_cos = theta.cos;
      theta_sin = theta.sin;
      break;
    }
  }
  const auto phi = sin_cos(2.0 * kPi * random.uniform());
  const double distance = kRing + kTube * theta_cos;
  // Parts: the outer half of the tube (away from the axis), the inner half.
  return {{distance * phi.cos, kTube * theta_sin, distance * phi.sin},
          {theta_cos * phi.cos, theta_sin, theta_cos * phi.sin},
          theta_cos >= 0.0 ? 0 : 1};
}

SurfacePoint capsule(Random& random) {
  constexpr double kRadius = 0.45;
  constexpr double kHalfLength = 0.55;  // of the straight part
  const double tube = 2.0 * kPi * kRadius * 2.0 * kHalfLength;
  const double half_sphere = 2.0 * kPi * kRadius * kRadius;
  // Parts: tube, top, bottom.
  switch (pick(random, {tube, half_sphere, half_sphere})) {
    case 0:
      return on_part(on_tube(random, kRadius, -kHalfLength, kHalfLength), 0);
    case 1:
      return on_part(on_sphere(random, {0.0, kHalfLength, 0.0}, kRadius, 0.0, 1.0), 1);
    default:
      return on_part(on_sphere(random, {0.0, -kHalfLength, 0.0}, kRadius, -1.0, 0.0), 2);
  }
}

SurfacePoint ellipsoid(Random& random) {
  constexpr double kA = 1.0;  // semi-axes along x, y, z
  constexpr double kB = 0.6;
  constexpr double kC = 0.4;
  // Stretching the unit sphere by (a, b, c) scales the area at direction d
  // by |(bc dx, ac dy, ab dz)|; rejection against its maximum makes the
  // stretched points uniform by area.
  const double largest = kA * kB;  // the largest of bc, ac, ab
  for (;;) {
    const Vec3 d = on_sphere(random, {0.0, 0.0, 0.0}, 1.0).normal;
    const double stretch = norm({kB * kC * d[0], kA * kC * d[1], kA * kB * d[2]});
    if (random.uniform() * largest < stretch) {
      const Vec3 normal{d[0] / kA, d[1] / kB, d[2] / kC};
      return {
          {kA * d[0], kB * d[1], kC * d[2]}, (1.0 / norm(normal)) * normal, upper_or_lower(d[1])};
    }
  }
}

SurfacePoint dome(Random& random) {
  // A half sphere on its flat base; the base is half the curved area.
  // Parts: cap, base.
  if (pick(random, {2.0 * kPi, kPi}) == 1) {
    return on_part(on_disk(random, 1.0, 0.0, -1.0), 1);
  }
  return on_sphere(random, {0.0, 0.0, 0.0}, 1.0, 0.0, 1.0);
}

}  // namespace

const char* shape_name(ShapeKind kind) {
  switch (kind) {
    case ShapeKind::kSphere:
      return "sphere";
    case ShapeKind::kCube:
      return "cube";
    case ShapeKind::kCylinder:
      return "cylinder";
    case ShapeKind::kCone:
      return "cone";
    case ShapeKind::kTorus:
      return "torus";
    case ShapeKind::kSquarePyramid:
      return "square_pyramid";
    case ShapeKind::kDisk:
      return "disk";
    case ShapeKind::kCapsule:
      return "capsule";
    case ShapeKind::kEllipsoid:
      return "ellipsoid";
    case ShapeKind::kOctahedron:
      return "octahedron";
    case ShapeKind::kTetrahedron:
      return "tetrahedron";
    case ShapeKind::kHexagonalPrism:
      return "hexagonal_prism";
    case ShapeKind::kDome:
      return "dome";
  }
  DTRAIN_INTERNAL_ASSERT(false, "unknown ShapeKind ", static_cast<int>(kind));
}

const std::vector<std::string>& shape_part_names(ShapeKind kind) {
  // In the order of the part numbers the samplers above give.
  static const std::vector<std::vector<std::string>> names = {
      {"upper", "lower"},          // sphere
      {"top", "bottom", "sides"},  // cube
      {"side", "top", "bottom"},   // cylinder
      {"side", "base"},            // cone
      {"outer", "inner"},          // torus
      {"sides", "base"},           // square pyramid
      {"rim", "top", "bottom"},    // disk
      {"tube", "top", "bottom"},   // capsule
      {"upper", "lower"},          // ellipsoid
      {"upper", "lower"},          // octahedron
      {"upper", "lower"},          // tetrahedron
      {"sides", "top", "bottom"},  // hexagonal prism
      {"cap", "base"},             // dome
  };
  static_assert(kNumShapeKinds == 13, "name the parts of the new kind of solid above");
  return names[static_cast<std::size_t>(kind)];
}

SurfacePoint sample_surface(ShapeKind kind, Random& random) {
  switch (kind) {
    case ShapeKind::kSphere: {
      const SurfacePoint s = on_sphere(random, {0.0, 0.0, 0.0}, 1.0);
      return on_part(s, upper_or_lower(s.normal[1]));
    }
    case ShapeKind::kCube:
      return cube().sample(random);
    case ShapeKind::kCylinder:
      return on_cylinder(random, 0.7, 1.0);
    case ShapeKind::kCone:
      return cone(random);
    case ShapeKind::kTorus:
      return torus(random);
    case ShapeKind::kSquarePyramid:
      return square_pyramid().sample(random);
    case ShapeKind::kDisk:
      return on_cylinder(random, 1.0, 0.06);
    case ShapeKind::kCapsule:
      return capsule(random);
    case ShapeKind::kEllipsoid:
      return ellipsoid(random);
    case ShapeKind::kOctahedron:
      return octahedron().sample(random);
    case ShapeKind::kTetrahedron:
      return tetrahedron().sample(random);
    case ShapeKind::kHexagonalPrism:
      return hexagonal_prism().sample(random);
    case ShapeKind::kDome:
      return dome(random);
  }
  DTRAIN_INTERNAL_ASSERT(false, "unknown ShapeKind ", static_cast<int>(kind));
}

}  // namespace dtrain::datasets
