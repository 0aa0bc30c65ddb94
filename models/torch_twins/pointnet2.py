"""dtrain's PointNet++ networks in plain PyTorch (Qi et al., 2017).

Same layers, presets and submodule names as the C++ models
(models/include/dtrain/models/pointnet2_cls.h, pointnet2_part_seg.h,
set_abstraction.h, feature_propagation.h): set abstraction layers of
1x1 convolutions without bias + batch norm + ReLU over each neighbourhood
(coordinates relative to their centre, then the features), a max over it;
feature propagation by inverse squared distance over the three nearest
points; heads of linear or 1x1 conv + batch norm + ReLU + dropout. So
`sa1.mlp0.0.weight` here is `sa1.mlp0.0.weight` there.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# (npoint, [(radius, nsample, mlp)]) per layer (npoint 0 groups all), head widths.
CLS_PRESETS = {
    "ssg": ([(512, [(0.2, 32, [64, 64, 128])]), (128, [(0.4, 64, [128, 128, 256])]),
             (0, [(0, 0, [256, 512, 1024])])], [512, 256]),
    "msg": ([(512, [(0.1, 16, [32, 32, 64]), (0.2, 32, [64, 64, 128]), (0.4, 128, [64, 96, 128])]),
             (128, [(0.2, 32, [64, 64, 128]), (0.4, 64, [128, 128, 256]),
                    (0.8, 128, [128, 128, 256])]),
             (0, [(0, 0, [256, 512, 1024])])], [512, 256]),
    "ssg-lite": ([(128, [(0.2, 16, [32, 32, 64])]), (32, [(0.4, 32, [64, 64, 128])]),
                  (0, [(0, 0, [128, 256, 512])])], [256, 128]),
}
# The classifier preset of the encoder, the propagations' widths (deepest first), head widths.
PART_SEG_PRESETS = {
    "ssg": ("ssg", [[256, 256], [256, 128], [128, 128, 128]], [128]),
    "ssg-lite": ("ssg-lite", [[128, 128], [128, 64], [64, 64, 64]], [64]),
}


class DtrainOps:
    """dtrain's kernels, as torch.ops.dtrain.* (torch.ops.load_library first)."""

    @staticmethod
    def fps(xyz, npoint):
        return torch.ops.dtrain.furthest_point_sample(xyz, npoint)

    @staticmethod
    def gather(features, idx):
        return torch.ops.dtrain.gather_points(features, idx)

    @staticmethod
    def ball(new_xyz, xyz, radius, nsample):
        return torch.ops.dtrain.ball_query(new_xyz, xyz, radius, nsample)[0]

    @staticmethod
    def group(features, idx):
        return torch.ops.dtrain.group_points(features, idx)

    @staticmethod
    def three_nn(unknown, known):
        """(squared distances, indices) of each unknown point's three nearest known points."""
        return torch.ops.dtrain.three_nn(unknown, known)

    @staticmethod
    def three_interpolate(features, idx, weight):
        return torch.ops.dtrain.three_interpolate(features, idx, weight)


def norm_relu_layers(make_layer, norm, channels, widths, dropout=None):
    """make_layer -> norm -> ReLU [-> Dropout] per width, as the C++
    append_norm_relu_layers: one Sequential, so the indices match."""
    layers = []
    for width in widths:
        layers += [make_layer(channels, width), norm(width), nn.ReLU(inplace=True)]
        if dropout is not None:
            layers.append(nn.Dropout(dropout))
        channels = width
    return layers, channels


def shared_mlp_2d(channels, widths):
    layers, _ = norm_relu_layers(lambda i, o: nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d,
                                 channels, widths)
    return nn.Sequential(*layers)


class SetAbstraction(nn.Module):
    def __init__(self, npoint, scales, in_channels, ops=DtrainOps, channels_last=False):
        super().__init__()
        self.ops, self.npoint, self.scales = ops, npoint, scales
        self.channels_last = channels_last
        for s, (_, _, mlp) in enumerate(scales):
            self.add_module(f"mlp{s}", shared_mlp_2d(in_channels + 3, mlp))
        self.out_channels = sum(scale[2][-1] for scale in scales)

    def mlps(self):
        return [getattr(self, f"mlp{s}") for s in range(len(self.scales))]

    def run_mlp(self, mlp, grouped):
        if not self.channels_last:
            return mlp(grouped).max(-1)[0]
        out = mlp(grouped.contiguous(memory_format=torch.channels_last))
        return out.permute(0, 2, 3, 1).max(2)[0].permute(0, 2, 1)

    def forward(self, xyz, features):
        """xyz (B, N, 3), features (B, C, N) or None -> centres (B, M, 3), (B, C', M)."""
        xyz_t = xyz.transpose(1, 2)
        if not self.channels_last:
            xyz_t = xyz_t.contiguous()
        if self.npoint == 0:
            grouped = xyz_t.unsqueeze(2)
            if features is not None:
                grouped = torch.cat([grouped, features.unsqueeze(2)], 1)
            return xyz.new_zeros(xyz.shape[0], 1, 3), self.run_mlp(self.mlp0, grouped)
        idx = self.ops.fps(xyz, self.npoint)
        centres_t = self.ops.gather(xyz_t, idx)
        centres = centres_t.transpose(1, 2).contiguous()
        outputs = []
        for (radius, nsample, _), mlp in zip(self.scales, self.mlps()):
            neighbours = self.ops.ball(centres, xyz, radius, nsample)
            grouped = self.ops.group(xyz_t, neighbours) - centres_t.unsqueeze(-1)
            if features is not None:
                grouped = torch.cat([grouped, self.ops.group(features, neighbours)], 1)
            outputs.append(self.run_mlp(mlp, grouped))
        return centres, torch.cat(outputs, 1) if len(outputs) > 1 else outputs[0]


def set_abstractions(module, layers, in_channels, ops, channels_last):
    """Registers sa1, sa2, ... on `module`; returns them and each level's channels."""
    added, channels = [], [in_channels]
    for i, (npoint, scales) in enumerate(layers):
        layer = SetAbstraction(npoint, scales, channels[-1], ops, channels_last)
        module.add_module(f"sa{i + 1}", layer)
        added.append(layer)
        channels.append(layer.out_channels)
    return added, channels


class PointNet2Cls(nn.Module):
    """points (B, N, 3 + in_channels) -> logits (B, num_classes)."""

    def __init__(self, preset, num_classes, in_channels=0, ops=DtrainOps, channels_last=False,
                 dropout=0.5):
        super().__init__()
        layers, head = CLS_PRESETS[preset]
        self.in_channels = in_channels
        self.layers, channels = set_abstractions(self, layers, in_channels, ops, channels_last)
        modules, width = norm_relu_layers(lambda i, o: nn.Linear(i, o, bias=False),
                                          nn.BatchNorm1d, channels[-1], head, dropout)
        modules.append(nn.Linear(width, num_classes))
        self.head = nn.Sequential(*modules)

    def forward(self, points):
        xyz = points[..., :3].contiguous()
        features = points[..., 3:].transpose(1, 2).contiguous() if self.in_channels else None
        for layer in self.layers:
            xyz, features = layer(xyz, features)
        return self.head(features.squeeze(-1))


class FeaturePropagation(nn.Module):
    def __init__(self, in_channels, widths, ops=DtrainOps):
        super().__init__()
        self.ops = ops
        layers, _ = norm_relu_layers(lambda i, o: nn.Conv1d(i, o, 1, bias=False), nn.BatchNorm1d,
                                     in_channels, widths)
        self.mlp = nn.Sequential(*layers)

    def interpolate(self, xyz1, xyz2, features2):
        if xyz2.shape[1] == 1:
            return features2.expand(-1, -1, xyz1.shape[1])
        dist2, idx = self.ops.three_nn(xyz1.float(), xyz2.float())
        inverse = 1.0 / (dist2 + 1e-8)
        return self.ops.three_interpolate(features2, idx, inverse / inverse.sum(-1, keepdim=True))

    def forward(self, xyz1, xyz2, features1, features2):
        """Dense xyz1 (B, N, 3), sparse xyz2 (B, M, 3), skip features1 (B, C1, N) or None,
        sparse features2 (B, C2, M) -> (B, widths[-1], N)."""
        parts = [self.interpolate(xyz1, xyz2, features2)]
        if features1 is not None:
            parts.append(features1.to(parts[0].dtype))
        return self.mlp(torch.cat(parts, 1))


class PointNet2PartSeg(nn.Module):
    """points (B, N, 3 + in_channels), categories (B,) -> part logits (B, num_parts, N)."""

    def __init__(self, preset, num_parts, num_categories, in_channels=0, ops=DtrainOps,
                 dropout=0.5):
        super().__init__()
        encoder, propagations, head = PART_SEG_PRESETS[preset]
        self.in_channels, self.num_categories = in_channels, num_categories
        self.down, levels = set_abstractions(self, CLS_PRESETS[encoder][0], in_channels, ops,
                                             False)
        self.up = []
        sparse = levels[-1]
        for k, widths in enumerate(propagations):  # deepest level first, as the C++ model
            level = len(propagations) - 1 - k
            skip = num_categories + 3 + in_channels if level == 0 else levels[level]
            layer = FeaturePropagation(sparse + skip, widths, ops)
            self.add_module(f"fp{level + 1}", layer)
            self.up.append(layer)
            sparse = widths[-1]
        modules, width = norm_relu_layers(lambda i, o: nn.Conv1d(i, o, 1, bias=False),
                                          nn.BatchNorm1d, sparse, head, dropout)
        modules.append(nn.Conv1d(width, num_parts, 1))
        self.head = nn.Sequential(*modules)

    def forward(self, points, categories=None):
        xyz = [points[..., :3].float().contiguous()]
        features = [points[..., 3:].transpose(1, 2).contiguous() if self.in_channels else None]
        for layer in self.down:
            centres, out = layer(xyz[-1], features[-1])
            xyz.append(centres)
            features.append(out)
        batch, n = points.shape[0], points.shape[1]
        link = []
        if self.num_categories:
            one_hot = F.one_hot(categories, self.num_categories).to(xyz[0].dtype)
            link.append(one_hot.unsqueeze(-1).expand(batch, self.num_categories, n))
        link.append(xyz[0].transpose(1, 2))
        if features[0] is not None:
            link.append(features[0].to(xyz[0].dtype))
        link = torch.cat(link, 1)
        up = features[-1]
        for k, layer in enumerate(self.up):
            level = len(self.up) - 1 - k
            up = layer(xyz[level], xyz[level + 1], link if level == 0 else features[level], up)
        return self.head(up)
