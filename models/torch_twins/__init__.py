"""Plain-PyTorch twins of the models dtrain's apps train.

Each twin is the same network as its C++ model in dtrain::models, with its
submodules named as the C++ model registers them, so a state dict moves
between the two unchanged (dtrain::train::save_state_dict / load_state_dict
on the C++ side, torch.save / torch.load on this one):

  pointnet2.PointNet2Cls      dtrain::models::PointNet2Cls (presets ssg, msg, ssg-lite)
  pointnet2.PointNet2PartSeg  dtrain::models::PointNet2PartSeg (presets ssg, ssg-lite)
  toy_cnn.ToyCnn              dtrain::models::ToyCnn

The point ops come from dtrain's kernels as torch.ops.dtrain.* (load
libdtrain_kernels.so with torch.ops.load_library first), or from any object
with the same five methods (pointnet2.DtrainOps shows them). The tests of
the state dicts and the benchmarks' PyTorch peers share these classes.
"""
